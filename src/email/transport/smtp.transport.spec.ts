import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink';
import { freePort } from '../../../test/support/free-port';
import { bufferSource, ProviderFailure } from './mail-transport';
import { SmtpTransport } from './smtp.transport';

/** A signed-looking source with the lines SMTP must escape or keep: a leading dot, a bare "." line, 8-bit text. */
const raw = Buffer.from(
  'DKIM-Signature: v=1; a=rsa-sha256; d=acme.test; s=mr1; b=abc\r\n' +
    'From: Ada <ada@acme.test>\r\nTo: bob@example.org\r\nSubject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=\r\n' +
    'Message-ID: <m1@acme.test>\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n' +
    '.a line that starts with a dot\r\n.\r\nGrüße\r\n',
);

describe('SmtpTransport (nodemailer pool, real SMTP server)', () => {
  let sink: SmtpSink;
  let transport: SmtpTransport;

  beforeAll(async () => {
    sink = await startSmtpSink();
    transport = new SmtpTransport(sink.url, 2);
  });
  afterEach(() => sink.clearRejections());
  afterAll(async () => {
    await transport.close();
    await sink.close();
  });

  it('hands the server the bytes it was given, unchanged, for the envelope it was given', async () => {
    const result = await transport.send({
      messageId: 'msg_1',
      from: 'bounce+m1@acme.test',
      recipients: ['bob@example.org'],
      source: bufferSource(raw),
    });
    expect(result).toEqual({ accepted: ['bob@example.org'], rejected: [], response: expect.stringMatching(/^250 /) });
    const mail = await sink.waitFor((m) => m.envelope.rcptTo.includes('bob@example.org'));
    expect(mail.envelope).toEqual({ mailFrom: 'bounce+m1@acme.test', rcptTo: ['bob@example.org'] });
    expect(mail.raw.equals(raw)).toBe(true);
  });

  it('answers per recipient when the server refuses some at RCPT TO, and sends to the others', async () => {
    sink.rejectRecipient('gone@example.org', 550, '5.1.1 No such user');
    const result = await transport.send({
      messageId: 'msg_2',
      from: 'bounce+m2@acme.test',
      recipients: ['carol@example.org', 'gone@example.org'],
      source: bufferSource(raw),
    });
    expect(result.accepted).toEqual(['carol@example.org']);
    expect(result.rejected).toEqual([
      { recipient: 'gone@example.org', responseCode: 550, response: expect.stringContaining('5.1.1 No such user') },
    ]);
    const mail = await sink.waitFor((m) => m.envelope.rcptTo.includes('carol@example.org'));
    expect(mail.envelope.rcptTo).toEqual(['carol@example.org']);
  });

  it('answers every recipient refused as a result, not a failure', async () => {
    sink.rejectRecipient('gone@example.org', 550, '5.1.1 No such user');
    const result = await transport.send({
      messageId: 'msg_3',
      from: 'bounce+m3@acme.test',
      recipients: ['gone@example.org'],
      source: bufferSource(raw),
    });
    expect(result).toEqual({
      accepted: [],
      rejected: [{ recipient: 'gone@example.org', responseCode: 550, response: expect.stringContaining('No such user') }],
      response: '',
    });
  });

  it('rejects with a ProviderFailure when the server refuses the message at DATA', async () => {
    sink.failNext(1, 451, '4.3.0 Try again later');
    const sent = transport.send({
      messageId: 'msg_4',
      from: 'bounce+m4@acme.test',
      recipients: ['dan@example.org'],
      source: bufferSource(raw),
    });
    await expect(sent).rejects.toBeInstanceOf(ProviderFailure);
    await expect(sent).rejects.toMatchObject({ responseCode: 451, description: expect.stringContaining('Try again later') });
  });

  it('rejects with a ProviderFailure when nothing listens', async () => {
    const nowhere = new SmtpTransport(`smtp://127.0.0.1:${await freePort()}`, 1);
    try {
      await expect(
        nowhere.send({ messageId: 'msg_5', from: 'a@acme.test', recipients: ['b@example.org'], source: bufferSource(raw) }),
      ).rejects.toBeInstanceOf(ProviderFailure);
    } finally {
      await nowhere.close();
    }
  });
});
