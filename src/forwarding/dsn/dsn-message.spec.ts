import { simpleParser, type SimpleParserOptions } from 'mailparser';
import { parseDeliveryReport } from '../delivery-report';
import { composeDsn, isDsnContent } from '../../email/dsn-mime';
import { dsnContent, DsnInput } from './dsn-message';

const input = (over: Partial<DsnInput> = {}): DsnInput => ({
  reportingMta: 'mx.mailroom.test',
  sender: 'sender@origin.test',
  arrivedAt: new Date('2026-11-23T10:00:00Z'),
  failed: [
    {
      recipient: 'info@fwd.test',
      status: '5.1.1',
      diagnostic: 'smtp; 550 5.1.1 No such user',
      lastAttemptAt: new Date('2026-11-23T10:00:05Z'),
    },
  ],
  originalHeaders: 'From: Sender <sender@origin.test>\r\nSubject: Grüße\r\nMessage-ID: <orig@origin.test>\r\n',
  originalMessageId: '<orig@origin.test>',
  originalSubject: 'Grüße',
  date: new Date('2026-11-23T10:00:06Z'),
  ...over,
});

describe('delivery status notification', () => {
  it('is a multipart/report our own report parser reads back: each failed recipient with its status and diagnostic', async () => {
    const content = dsnContent(
      input({
        failed: [
          ...input().failed,
          { recipient: 'sales@fwd.test', status: '4.2.2', diagnostic: 'smtp; 452 4.2.2 Mailbox full', lastAttemptAt: new Date() },
        ],
      }),
    );
    const raw = composeDsn('msg_abc123', '<abc123@mx.mailroom.test>', content);
    expect(await parseDeliveryReport(raw)).toEqual({
      originalMessageId: '<orig@origin.test>',
      recipients: [
        { outcome: 'bounced', recipient: 'info@fwd.test', status: '5.1.1', reason: '550 5.1.1 No such user', suppresses: true },
        { outcome: 'bounced', recipient: 'sales@fwd.test', status: '4.2.2', reason: '452 4.2.2 Mailbox full', suppresses: false },
      ],
    });
  });

  it('comes from MAILER-DAEMON, says it was made by a machine, answers the original and carries its headers byte for byte', async () => {
    const raw = composeDsn('msg_abc123', '<abc123@mx.mailroom.test>', dsnContent(input()));
    const mail = await simpleParser(raw, { keepDeliveryStatus: true } as SimpleParserOptions);
    expect(mail.from?.value[0]).toEqual({ name: 'Mail Delivery System', address: 'MAILER-DAEMON@mx.mailroom.test' });
    expect(mail.headers.get('auto-submitted')).toBe('auto-replied');
    expect(mail.inReplyTo).toBe('<orig@origin.test>');
    expect(mail.headers.get('content-type')).toMatchObject({ value: 'multipart/report', params: { 'report-type': 'delivery-status' } });
    expect(mail.text).toContain('<info@fwd.test>: refused: 550 5.1.1 No such user');
    expect(mail.text).toContain('Subject of your message: Grüße');
    const headersPart = mail.attachments.find((a) => a.contentType === 'text/rfc822-headers');
    expect(headersPart?.content.toString('latin1')).toBe(input().originalHeaders);
    const status = mail.attachments.find((a) => a.contentType === 'message/delivery-status')!.content.toString();
    expect(status).toContain('Reporting-MTA: dns; mx.mailroom.test\r\nArrival-Date: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\n');
    expect(status).toContain('Final-Recipient: rfc822; info@fwd.test\r\nAction: failed\r\nStatus: 5.1.1\r\n');
  });

  it('is the same bytes at every composition, and leaves out the headers part once they are gone', () => {
    const content = dsnContent(input());
    expect(composeDsn('msg_a', '<a@x>', content).equals(composeDsn('msg_a', '<a@x>', content))).toBe(true);
    const bare = composeDsn('msg_a', '<a@x>', dsnContent(input({ originalHeaders: null, originalMessageId: null })));
    expect(bare.toString()).not.toContain('text/rfc822-headers');
    expect(bare.toString()).not.toContain('In-Reply-To');
  });

  it('is told apart from other stored content by its report', () => {
    const content = dsnContent(input());
    expect(isDsnContent(content)).toBe(true);
    const { report: _report, ...plain } = content;
    expect(isDsnContent(plain)).toBe(false);
  });
});
