import { createHash, createPrivateKey, generateKeyPairSync, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { version as installedVersion } from 'nodemailer/package.json';
import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink';
import { freePort } from '../../../test/support/free-port';
import { type DkimKey, signSource } from '../dkim-signer';
import { classifyTransactionError, type SmtpErrorLike } from '../smtp-outcome';
import { bufferSource, type OutgoingEmail } from './mail-transport';
import {
  asciiDomain,
  composeMessage,
  foldLines,
  NODEMAILER_VERSION,
  parseAddressField,
  relaxedBodyHasher,
  relaxedHeaders,
  SmtpPool,
} from './nodemailer';

/**
 * Fails when an upgrade of nodemailer changes one of the private pieces Mailroom relies on: the version, then
 * each piece on fixed inputs against the output it gives today (same bytes on the wire, same DKIM signatures,
 * the answers and errors the outcome code reads).
 */
async function failureOf(sent: Promise<unknown>): Promise<SmtpErrorLike> {
  try {
    await sent;
  } catch (err) {
    return err as SmtpErrorLike;
  }
  throw new Error('expected the send to fail');
}

describe('nodemailer internals (pinned version)', () => {
  it('is the version the pieces below were checked with, pinned exactly in package.json', () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(installedVersion).toBe(NODEMAILER_VERSION);
    expect(manifest.dependencies.nodemailer).toBe(NODEMAILER_VERSION);
  });

  it('parses an address field into mailboxes, groups flattened', () => {
    expect(parseAddressField('"Ada, L." <ada@example.org>, bob@example.org, team: carol@example.org;')).toEqual([
      { name: 'Ada, L.', address: 'ada@example.org' },
      { name: '', address: 'bob@example.org' },
      { name: '', address: 'carol@example.org' },
    ]);
  });

  it('composes the same MIME bytes', async () => {
    const bytes = await buffer(
      composeMessage({
        from: { name: 'Acme', address: 'hello@acme.test' },
        to: [{ name: 'Ada Lovelace', address: 'ada@example.org' }],
        subject: 'Grüße',
        text: 'Hello,\n\nthe report.',
        html: '<p>Hello</p>',
        headers: { 'X-Campaign': 'weekly' },
        attachments: [{ filename: 'a.txt', content: Buffer.from('abc') }],
        messageId: '<01j@acme.test>',
        date: new Date('2026-11-24T10:00:00.000Z'),
        baseBoundary: '01j0000000000000000000000',
        disableFileAccess: true,
        disableUrlAccess: true,
      }),
    );
    const part = (n: number) => `--_NmP-01j0000000000000000000000-Part_${n}`;
    expect(bytes.toString('latin1')).toBe(
      [
        'X-Campaign: weekly',
        'From: Acme <hello@acme.test>',
        'To: Ada Lovelace <ada@example.org>',
        'Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=',
        'Message-ID: <01j@acme.test>',
        'Date: Tue, 24 Nov 2026 10:00:00 +0000',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed;',
        ` boundary="${part(1)}"`,
        '',
        `--${part(1)}`,
        'Content-Type: multipart/alternative;',
        ` boundary="${part(2)}"`,
        '',
        `--${part(2)}`,
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: 7bit',
        '',
        'Hello,\n\nthe report.',
        `--${part(2)}`,
        'Content-Type: text/html; charset=utf-8',
        'Content-Transfer-Encoding: 7bit',
        '',
        '<p>Hello</p>',
        `--${part(2)}--`,
        '',
        `--${part(1)}`,
        'Content-Type: text/plain; name=a.txt',
        'Content-Transfer-Encoding: base64',
        'Content-Disposition: attachment; filename=a.txt',
        '',
        'YWJj',
        `--${part(1)}--`,
        '',
      ].join('\r\n'),
    );
  });

  it('hashes the relaxed body: trailing whitespace dropped, runs of it one space, empty lines at the end ignored', async () => {
    const hasher = relaxedBodyHasher();
    hasher.resume();
    const hashed = new Promise((resolve) => hasher.once('hash', resolve));
    hasher.end(Buffer.from('Hi  there \t\r\n\r\nsecond\tline\r\n\r\n\r\n'));
    expect(await hashed).toBe(createHash('sha256').update('Hi there\r\n\r\nsecond line\r\n').digest('base64'));
  });

  it('canonicalises the header fields to sign, in the order asked, and names those found', () => {
    const fields = [
      { key: 'from', line: 'From:  Ada \t<ada@acme.test> ' },
      { key: 'x-other', line: 'X-Other: a' },
      { key: 'subject', line: 'Subject: Hello\r\n  world' },
    ];
    expect(relaxedHeaders(fields, 'From:Subject:To')).toEqual({
      headers: 'from:Ada <ada@acme.test>\r\nsubject:Hello world\r\n',
      fieldNames: 'from:subject',
    });
  });

  it('folds a header line at 76 columns after a space', () => {
    const tags = 'v=1; a=rsa-sha256; c=relaxed/relaxed; d=acme.test; q=dns/txt; s=mr1; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=';
    expect(foldLines(`DKIM-Signature: ${tags}; h=From:Subject:Date:Message-ID:To`, 76)).toBe(
      'DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=acme.test;\r\n' +
        ' q=dns/txt; s=mr1; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;\r\n' +
        ' h=From:Subject:Date:Message-ID:To',
    );
  });

  it('writes a domain in its ASCII form', () => {
    expect(asciiDomain('Bücher.Example')).toBe('xn--bcher-kva.example');
    expect(asciiDomain('acme.test')).toBe('acme.test');
  });

  it('gives the signer the DKIM-Signature field and signed data it gives today', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const key: DkimKey = {
      domainName: 'Bücher.Example',
      keySelector: 'mr1',
      privateKey: createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' })),
      headerFieldNames: 'From:Subject:To',
    };
    const raw = 'From:  Ada <ada@xn--bcher-kva.example>\r\nSubject: Hello\r\n  world\r\nTo: bob@example.org\r\n\r\nHi  there \r\n\r\n';
    const signed = (await buffer((await signSource(bufferSource(Buffer.from(raw)), key))())).toString('latin1');
    const bodyHash = createHash('sha256').update('Hi there\r\n').digest('base64');
    const fieldWithoutB =
      'DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed;\r\n' +
      ' d=xn--bcher-kva.example; q=dns/txt; s=mr1;\r\n' +
      ` bh=${bodyHash}; h=from:subject:to;\r\n b=`;
    expect(signed.slice(0, fieldWithoutB.length)).toBe(fieldWithoutB);
    const [, b, message] = /^[^]*?\r\n b=([^]*?)\r\n(?![ \t])([^]*)$/.exec(signed)!;
    expect(message).toBe(raw);
    const signedData =
      'from:Ada <ada@xn--bcher-kva.example>\r\nsubject:Hello world\r\nto:bob@example.org\r\n' +
      `dkim-signature:v=1; a=rsa-sha256; c=relaxed/relaxed; d=xn--bcher-kva.example; q=dns/txt; s=mr1; bh=${bodyHash}; h=from:subject:to; b=`;
    expect(verify('sha256', Buffer.from(signedData), publicKey, Buffer.from(b.replace(/\r\n /g, ''), 'base64'))).toBe(true);
  });

  describe('SmtpPool against a real SMTP server', () => {
    let sink: SmtpSink;
    let pool: SmtpPool;
    const raw = Buffer.from('From: a@acme.test\r\nTo: b@example.org\r\nSubject: hi\r\n\r\n.leading dot\r\nbody\r\n');
    const email = (messageId: string, recipients: string[]): OutgoingEmail => ({
      messageId,
      from: `bounce+${messageId}@acme.test`,
      recipients,
      source: bufferSource(raw),
    });

    beforeAll(async () => {
      sink = await startSmtpSink();
      pool = new SmtpPool({
        host: '127.0.0.1',
        port: Number(new URL(sink.url).port),
        secure: false,
        maxConnections: 1,
        maxMessages: Infinity,
      });
    });
    afterEach(() => sink.clearRejections());
    afterAll(async () => {
      pool.close();
      await sink.close();
    });

    it('sends the bytes as they are, for the envelope given, and answers per recipient', async () => {
      sink.rejectRecipient('gone@example.org', 550, '5.1.1 No such user');
      const info = await pool.send(email('m1', ['carol@example.org', 'gone@example.org']));
      expect(info).toMatchObject({
        accepted: ['carol@example.org'],
        rejected: ['gone@example.org'],
        rejectedErrors: [{ recipient: 'gone@example.org', responseCode: 550, response: expect.stringContaining('No such user') }],
        response: expect.stringMatching(/^250 /),
      });
      const mail = await sink.waitFor((m) => m.envelope.rcptTo.includes('carol@example.org'));
      expect(mail.envelope).toEqual({ mailFrom: 'bounce+m1@acme.test', rcptTo: ['carol@example.org'] });
      expect(mail.raw.equals(raw)).toBe(true);
    });

    it('rejects with the RCPT TO answers when every recipient is refused', async () => {
      sink.rejectRecipient('gone@example.org', 550, '5.1.1 No such user');
      const err = await failureOf(pool.send(email('m2', ['gone@example.org'])));
      expect(classifyTransactionError(err)).toEqual({
        kind: 'recipients',
        answers: [{ recipient: 'gone@example.org', responseCode: 550, response: expect.stringContaining('No such user') }],
      });
    });

    it('rejects with the server’s code and command when it refuses the message at DATA', async () => {
      sink.failNext(1, 451, '4.3.0 Try again later');
      const err = await failureOf(pool.send(email('m3', ['dan@example.org'])));
      expect(classifyTransactionError(err)).toEqual({
        kind: 'provider',
        responseCode: 451,
        description: expect.stringMatching(/^DATA.*: 451 4\.3\.0 Try again later/),
      });
    });

    it('rejects with a socket error code when nothing listens', async () => {
      const nowhere = new SmtpPool({ host: '127.0.0.1', port: await freePort(), secure: false, maxConnections: 1 });
      try {
        const err = await failureOf(nowhere.send(email('m4', ['b@example.org'])));
        expect(classifyTransactionError(err)).toMatchObject({
          kind: 'provider',
          description: expect.stringMatching(/^ESOCKET: connect ECONNREFUSED/),
        });
      } finally {
        nowhere.close();
      }
    });
  });
});
