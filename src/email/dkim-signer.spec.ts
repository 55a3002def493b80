import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import fc from 'fast-check';
import nodemailer from 'nodemailer';
import { composeMime } from './message-content';
import { DKIM_SIGNED_HEADERS, type DkimKey, signSource } from './dkim-signer';
import { bufferSource } from './transport/mail-transport';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { dkimVerify } = require('mailauth/lib/dkim/verify') as {
  dkimVerify: (raw: Buffer, options: { resolver: (name: string, type: string) => Promise<string[][]> }) => Promise<DkimResults>;
};

interface DkimResults {
  results: { signingDomain: string; selector: string; status: { result: string } }[];
}

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key: DkimKey = {
  domainName: 'acme.test',
  keySelector: 'mr1',
  privateKey: createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' })),
  headerFieldNames: DKIM_SIGNED_HEADERS,
};
const dnsRecord = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
const resolver = (name: string, type: string) =>
  name === 'mr1._domainkey.acme.test' && type === 'TXT' ? Promise.resolve([[dnsRecord]]) : Promise.reject(new Error(`no ${type} ${name}`));

/** The bytes nodemailer's transport sends for a raw message: with its `dkim` option (the worker's signer before) or not. */
const transport = nodemailer.createTransport({ streamTransport: true, buffer: true });
async function sentByNodemailer(raw: Buffer, dkim?: DkimKey): Promise<string> {
  const info = await transport.sendMail({ envelope: { from: 'a@acme.test', to: ['b@example.org'] }, raw, ...(dkim ? { dkim } : {}) });
  return (info.message as Buffer).toString('latin1');
}
/** The bytes signSource gives for bytes in memory. */
const signBytes = async (raw: Buffer) => buffer((await signSource(bufferSource(raw), key))());
/** What goes out: signed by signSource, sent raw by the same transport. */
const sentSignedByUs = async (raw: Buffer) => sentByNodemailer(await signBytes(raw));

const composed = (content: Partial<Parameters<typeof composeMime>[2]> = {}) =>
  buffer(
    composeMime('msg_01j0000000000000000000000', '<01j@acme.test>', {
      from: { name: 'Acme', address: 'hello@acme.test' },
      to: [{ name: 'Ada Lovelace', address: 'ada@example.org' }],
      cc: [],
      replyTo: [],
      subject: 'Your weekly report',
      text: 'Hello,\n\nthe report.',
      html: '<p>Hello</p>',
      headers: {},
      attachments: [],
      date: '2026-11-24T10:00:00.000Z',
      ...content,
    }),
  );

/** A source that hands `raw` over in pieces cut at `cuts`, counting how often it is read. */
function piecewise(raw: Buffer, cuts: number[]): { open: () => Readable; readings: () => number } {
  let readings = 0;
  const ends = [...new Set(cuts.map((c) => Math.min(c, raw.length)))].sort((a, b) => a - b);
  const pieces = [0, ...ends].map((start, i) => raw.subarray(start, [...ends, raw.length][i]));
  return {
    open: () => {
      readings++;
      return Readable.from(pieces, { objectMode: false });
    },
    readings: () => readings,
  };
}

describe('signSource', () => {
  it('sends the bytes nodemailer’s own DKIM signing sent, and mailauth verifies them', async () => {
    const messages = [
      await composed(),
      await composed({
        subject: 'Ünïcødé and a subject long enough to be folded over more than one line by the composer, surely',
        headers: { 'List-Unsubscribe': '<https://acme.test/u/1>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
        attachments: [{ filename: 'report.pdf', content: Buffer.alloc(5000, 7).toString('base64'), contentType: 'application/pdf' }],
      }),
      await composed({ text: '', html: undefined }),
    ];
    for (const raw of messages) {
      expect(await sentSignedByUs(raw)).toBe(await sentByNodemailer(raw, key));
      const verified = await dkimVerify(await signBytes(raw), { resolver });
      expect(verified.results).toEqual([
        expect.objectContaining({ signingDomain: 'acme.test', selector: 'mr1', status: expect.objectContaining({ result: 'pass' }) }),
      ]);
    }
  });

  it('agrees with nodemailer on any header folding, whitespace, bare LF, lone CR and trailing empty lines', async () => {
    const space = fc.constantFrom(' ', '\t', '  \t ');
    const word = fc.stringMatching(/^[!-9;-~]{1,12}$/);
    const text = fc.array(fc.oneof(word, space, fc.constant('\r')), { maxLength: 8 }).map((parts) => parts.join(''));
    const name = fc.constantFrom('From', 'To', 'Subject', 'Date', 'Message-ID', 'X-Custom', 'subject', 'Cc', 'References');
    const field = fc
      .tuple(name, fc.constantFrom(':', ' :', ':  '), text, fc.array(fc.tuple(space, text), { maxLength: 2 }))
      .map(([n, colon, value, folds]) => `${n}${colon}${value}${folds.map(([s, t]) => `\r\n${s}${t}`).join('')}`);
    const lineBreak = fc.constantFrom('\r\n', '\n');
    const message = fc
      .tuple(fc.array(field, { minLength: 1, maxLength: 6 }), lineBreak, fc.array(fc.tuple(text, lineBreak), { maxLength: 6 }), text)
      .map(([fields, separator, lines, last]) => `${fields.join('\r\n')}\r\n${separator}${lines.map(([l, br]) => l + br).join('')}${last}`);
    await fc.assert(
      fc.asyncProperty(message, async (source) => {
        const raw = Buffer.from(source, 'latin1');
        expect(await sentSignedByUs(raw)).toBe(await sentByNodemailer(raw, key));
      }),
      { numRuns: 300 },
    );
  });

  it('signs a source read twice in pieces cut anywhere (an empty line split across them too) as it signs its bytes', async () => {
    const message = fc.tuple(
      fc.constantFrom(
        'From: a@acme.test\r\nSubject: x\r\n\r\nbody  \r\n\r\n',
        'From: a@acme.test\nSubject: x\n\nbody\r',
        'From: a@acme.test\r\nSubject: x\n\r\n\tline \r\r\nend',
        'From: a@acme.test\r\nSubject: no body',
        '',
      ),
      fc.array(fc.nat(60), { maxLength: 6 }),
    );
    await fc.assert(
      fc.asyncProperty(message, async ([text, cuts]) => {
        const raw = Buffer.from(text, 'latin1');
        const source = piecewise(raw, cuts);
        const signed = await buffer((await signSource(source.open, key))());
        expect(signed.toString('latin1')).toBe((await signBytes(raw)).toString('latin1'));
        expect(source.readings()).toBe(2);
      }),
      { numRuns: 200 },
    );
  });

  it('signs a composed message with a large attachment as nodemailer does, and reads it again for every sending', async () => {
    const raw = await composed({
      attachments: [{ filename: 'big.bin', content: Buffer.alloc(3 * 1024 * 1024, 'x\t \r\n').toString('base64') }],
    });
    const source = piecewise(raw, [17, 4096, 65_536, 1_000_000]);
    const signedSource = await signSource(source.open, key);
    const first = await buffer(signedSource());
    const second = await buffer(signedSource());
    expect(source.readings()).toBe(3);
    expect(first.equals(second)).toBe(true);
    expect(await sentByNodemailer(first)).toBe(await sentByNodemailer(raw, key));
  });
});
