import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { simpleParser } from 'mailparser';
import { AppException } from '../common/errors/app.exception';
import type { StoredAttachment } from '../outbox/attachments/attachment-content';
import { checkAttachments, checkCustomHeaders, composeMime, parseMailbox, parseRecipients } from './message-content';
import type { MessageContent } from '../outbox/message.entity';

function errorOf(fn: () => unknown): AppException {
  try {
    fn();
  } catch (err) {
    return err as AppException;
  }
  throw new Error('expected an error');
}

describe('parseMailbox', () => {
  it('accepts bare addresses and display names', () => {
    expect(parseMailbox('ada@example.org')).toEqual({ name: '', address: 'ada@example.org' });
    expect(parseMailbox('Ada Lovelace <ada@example.org>')).toEqual({ name: 'Ada Lovelace', address: 'ada@example.org' });
  });

  it('refuses non-addresses, lists and line breaks', () => {
    expect(parseMailbox('not-an-address')).toBeNull();
    expect(parseMailbox('a@example.org, b@example.org')).toBeNull();
    expect(parseMailbox('Ada\r\nBcc: x@evil.test <ada@example.org>')).toBeNull();
  });
});

describe('parseRecipients', () => {
  it('answers INVALID_RECIPIENT naming the field', () => {
    const error = errorOf(() => parseRecipients('cc', ['ok@example.org', 'broken@']));
    expect(error.code).toBe('INVALID_RECIPIENT');
    expect(error.details).toEqual({ field: 'cc[1]', value: 'broken@' });
  });
});

describe('checkCustomHeaders', () => {
  it('returns Reply-To apart and keeps custom headers', () => {
    expect(checkCustomHeaders({ 'Reply-To': 'Help <help@example.org>', 'X-Campaign': 'spring' })).toEqual({
      replyTo: [{ name: 'Help', address: 'help@example.org' }],
      custom: { 'X-Campaign': 'spring' },
    });
  });

  it('keeps a header named __proto__ or constructor as a header, not as the prototype', () => {
    const { custom } = checkCustomHeaders(JSON.parse('{"__proto__":"a","constructor":"b"}') as Record<string, unknown>);
    expect(Object.entries(custom)).toEqual([
      ['__proto__', 'a'],
      ['constructor', 'b'],
    ]);
  });

  it.each([
    [{ 'X-Test': 'a\r\nBcc: victim@example.org' }],
    [{ 'X-Test\r\nBcc': 'victim@example.org' }],
    [{ 'X-Test': 'a\nb' }],
    [{ 'Bad Name': 'x' }],
    [{ Subject: 'x' }],
    [{ 'content-type': 'text/plain' }],
    [{ 'DKIM-Signature': 'x' }],
    [{ 'Reply-To': 'nobody' }],
  ])('refuses %j', (headers) => {
    expect(errorOf(() => checkCustomHeaders(headers)).code).toBe('VALIDATION_FAILED');
  });
});

describe('checkAttachments', () => {
  it('refuses more than 25 MB in all, counted decoded', () => {
    expect(() => checkAttachments([{ filename: 'a.txt', content: Buffer.from('hi').toString('base64') }])).not.toThrow();
    const big = Buffer.alloc(13 * 1024 * 1024).toString('base64');
    const error = errorOf(() =>
      checkAttachments([
        { filename: 'a', content: big },
        { filename: 'b', content: big },
      ]),
    );
    expect(error.status).toBe(413);
  });

  it('refuses line breaks in file names', () => {
    expect(errorOf(() => checkAttachments([{ filename: 'a\r\nX-Evil: 1', content: '' }])).code).toBe('VALIDATION_FAILED');
  });
});

describe('composeMime', () => {
  const content: MessageContent = {
    from: { name: 'Acme', address: 'hello@acme.test' },
    to: [{ name: '', address: 'ada@example.org' }],
    cc: [],
    replyTo: [],
    subject: 'Grüße',
    text: 'hi',
    html: '<p>hi</p>',
    headers: { 'X-Campaign': 'spring' },
    attachments: [{ filename: 'a.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64') }],
    date: '2026-01-02T03:04:05.000Z',
  };

  it('fixes Message-ID and Date and keeps custom headers', async () => {
    const raw = (await buffer(composeMime('msg_abc', '<abc@acme.test>', content))).toString();
    expect(raw).toContain('Message-ID: <abc@acme.test>');
    expect(raw).toContain('Date: Fri, 02 Jan 2026 03:04:05 +0000');
    expect(raw).toContain('X-Campaign: spring');
  });

  it('composes the same bytes at every attempt', async () => {
    const first = await buffer(composeMime('msg_abc', '<abc@acme.test>', content));
    const second = await buffer(composeMime('msg_abc', '<abc@acme.test>', content));
    expect(first.equals(second)).toBe(true);
  });

  it('reads a stored attachment from the store as it is composed, and gives the bytes of the same attachment inline', async () => {
    const bytes = randomBytes(300_000);
    const stored: MessageContent = {
      ...content,
      attachments: [{ filename: 'a.bin', hash: createHash('sha256').update(bytes).digest('hex'), size: bytes.length }],
    };
    const inline: MessageContent = { ...content, attachments: [{ filename: 'a.bin', content: bytes.toString('base64') }] };
    const opened: string[] = [];
    // The store hands the bytes over in pieces, as it reads its chunks.
    const open = (attachment: StoredAttachment) => {
      opened.push(attachment.hash);
      return Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)], { objectMode: false });
    };
    const fromStore = await buffer(composeMime('msg_abc', '<abc@acme.test>', stored, open));
    expect(opened).toEqual([(stored.attachments[0] as StoredAttachment).hash]);
    expect(fromStore.equals(await buffer(composeMime('msg_abc', '<abc@acme.test>', inline)))).toBe(true);
    const parsed = await simpleParser(fromStore);
    expect(parsed.attachments.map((a) => a.content.equals(bytes))).toEqual([true]);
  });
});
