import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import { DataSource } from 'typeorm';
import { deliveryStatusReport } from '../support/delivery-status-report';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { rawMessage } from '../support/raw-message';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor, waitForValue } from '../support/wait-for';

const MAX_MESSAGE_BYTES = 200_000;
const MAX_CONNECTIONS_PER_IP = 6;

const message = (subject: string, options?: { headers?: string[]; body?: string }) => rawMessage('info@fwd.acme.test', subject, options);

/** The header field names of a block of header fields (folded lines joined). */
function fieldNames(block: string): string[] {
  return block
    .split('\r\n')
    .filter((line) => line && !/^[ \t]/.test(line))
    .map((line) => line.slice(0, line.indexOf(':')));
}

describe('Forwarding: the inbound SMTP server (D-31)', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let port: number;
  let adminKey: string;
  let tlsDir: string;
  let client: Transporter;
  let receiver: Server;
  const hooks: { type: string; messageId: string; recipient?: string }[] = [];
  const domain = 'fwd.acme.test';
  const strictDomain = 'strict.acme.test';
  let subjectCounter = 0;
  const subject = (label: string) => `${label} ${++subjectCounter} ${Date.now()}`;

  beforeAll(async () => {
    tlsDir = mkdtempSync(join(tmpdir(), 'mailroom-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        '/CN=mx.mailroom.test',
        '-days',
        '2',
        '-keyout',
        join(tlsDir, 'key.pem'),
        '-out',
        join(tlsDir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    sink = await startSmtpSink();
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        hooks.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        INBOUND_SMTP_HOSTNAME: 'mx.mailroom.test',
        INBOUND_SMTP_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
        INBOUND_SMTP_MAX_CONNECTIONS_PER_IP: String(MAX_CONNECTIONS_PER_IP),
        INBOUND_SMTP_TLS_CERT: join(tlsDir, 'cert.pem'),
        INBOUND_SMTP_TLS_KEY: join(tlsDir, 'key.pem'),
        EMAIL_RETRY_FIRST_DELAY_MS: '50',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      },
    });
    const account = await createAccount(t, 'Forwarder');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
    await createVerifiedDomain(t, account.accountId, strictDomain);
    await t.http
      .put(`/domains/${domain}`)
      .set(bearer(adminKey))
      .send({ forwarding: { info: ['ada@dest.test', 'bob@dest.test'], '*': ['catch@dest.test'] } })
      .expect(200);
    await t.http
      .put(`/domains/${strictDomain}`)
      .set(bearer(adminKey))
      .send({ forwarding: { info: ['ada@dest.test'] } })
      .expect(200);
    await t.http.post('/domains').set(bearer(adminKey)).send({ domain: 'pending.acme.test' }).expect(201);
    await t.http
      .put('/domains/pending.acme.test')
      .set(bearer(adminKey))
      .send({ forwarding: { '*': ['ada@dest.test'] } })
      .expect(200);
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    await t.http
      .post('/email/webhooks')
      .set(bearer(adminKey))
      .send({ url: hookUrl, events: ['bounced'] })
      .expect(201);
    client = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false } });
  });

  afterAll(async () => {
    client?.close();
    await t?.close();
    await sink?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    rmSync(tlsDir, { recursive: true, force: true });
  });

  const inboundCount = async () => Number((await t.app.get(DataSource).query('SELECT count(*) AS n FROM inbound_messages'))[0].n);

  /** The SMTP error of a refused send (nodemailer rejects with the server's code and text). */
  async function refusal(envelope: { from: string; to: string[] }, raw: Buffer): Promise<{ responseCode: number; response: string }> {
    const err = await client.sendMail({ envelope, raw }).then(
      () => null,
      (e: { responseCode: number; response: string }) => e,
    );
    if (!err) throw new Error('the server took the message');
    return { responseCode: err.responseCode, response: err.response };
  }

  it('forwards mail for an alias to its destinations, unchanged under the added trace fields, from an SRS sender', async () => {
    const s = subject('alias');
    const raw = message(s);
    const info = await client.sendMail({ envelope: { from: 'sender@origin.test', to: ['info@fwd.acme.test'] }, raw });
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);

    const mail = await sink.waitFor((m) => m.parsed?.subject === s);
    expect(mail.envelope.rcptTo.sort()).toEqual(['ada@dest.test', 'bob@dest.test']);
    expect(mail.envelope.mailFrom).toMatch(/^SRS0=[A-Z2-7]{8}=[A-Z2-7]{2}=origin\.test=sender@fwd\.acme\.test$/);

    // Byte for byte what was received, under the fields Mailroom adds.
    const tail = mail.raw.subarray(mail.raw.length - raw.length);
    expect(tail.equals(raw)).toBe(true);
    const added = mail.raw.subarray(0, mail.raw.length - raw.length).toString('latin1');
    expect(new Set(fieldNames(added))).toEqual(
      new Set([
        'DKIM-Signature',
        'Received',
        'X-Mailroom-Loop',
        'ARC-Seal',
        'ARC-Message-Signature',
        'ARC-Authentication-Results',
        'Authentication-Results',
      ]),
    );
    expect(added).toMatch(/Received: from [^\r\n]+\[127\.0\.0\.1\]\)\r\n\tby mx\.mailroom\.test \(Mailroom\) with ESMTPS id inb_/);
    // An opaque token of the alias, never its name.
    expect(added).toMatch(/X-Mailroom-Loop: [a-z2-7]{16}\r\n/);
    expect(added).not.toContain('X-Mailroom-Loop: info@');
    expect(added).toContain('d=fwd.acme.test');
  });

  it('sends mail for any other address of the domain to the wildcard rule, and a tagged alias to its alias', async () => {
    const wild = subject('wildcard');
    await client.sendMail({ envelope: { from: 'sender@origin.test', to: ['Someone.Else@FWD.acme.test'] }, raw: message(wild) });
    expect((await sink.waitFor((m) => m.parsed?.subject === wild)).envelope.rcptTo).toEqual(['catch@dest.test']);

    const tagged = subject('tagged');
    await client.sendMail({ envelope: { from: 'sender@origin.test', to: ['info+news@fwd.acme.test'] }, raw: message(tagged) });
    expect((await sink.waitFor((m) => m.parsed?.subject === tagged)).envelope.rcptTo.sort()).toEqual(['ada@dest.test', 'bob@dest.test']);
  });

  it('refuses unknown addresses, unknown domains and unverified domains at RCPT TO with 550 5.1.1, storing nothing', async () => {
    const before = await inboundCount();
    for (const to of ['nobody@strict.acme.test', 'info@elsewhere.test', 'info@pending.acme.test']) {
      const answer = await refusal({ from: 'sender@origin.test', to: [to] }, message(subject('unknown')));
      expect(answer.responseCode).toBe(550);
      expect(answer.response).toContain('5.1.1');
    }
    expect(await inboundCount()).toBe(before);
  });

  it('refuses a message over the size limit with 552 at DATA', async () => {
    const before = await inboundCount();
    const big = message(subject('big'), { body: `${'x'.repeat(998)}\r\n`.repeat(Math.ceil(MAX_MESSAGE_BYTES / 1000) + 10) });
    const answer = await refusal({ from: 'sender@origin.test', to: ['info@fwd.acme.test'] }, big);
    expect(answer.responseCode).toBe(552);
    expect(answer.response).toContain('5.3.4');
    expect(await inboundCount()).toBe(before);
  });

  it('stops loops: a message already forwarded for the address, or with too many hops, gets 554', async () => {
    const before = await inboundCount();
    const looped = message(subject('looped'), { headers: ['X-Mailroom-Loop: info@fwd.acme.test'] });
    const answer = await refusal({ from: 'sender@origin.test', to: ['info@fwd.acme.test'] }, looped);
    expect(answer.responseCode).toBe(554);
    expect(answer.response).toContain('5.4.6');

    const hops = Array.from(
      { length: 50 },
      (_, i) => `Received: from relay${i}.test by relay${i + 1}.test; Mon, 23 Nov 2026 09:00:00 +0000`,
    );
    expect(
      (await refusal({ from: 'sender@origin.test', to: ['info@fwd.acme.test'] }, message(subject('hops'), { headers: hops }))).responseCode,
    ).toBe(554);
    expect(await inboundCount()).toBe(before);

    // Forwarded for another address of ours before: not a loop.
    const other = subject('other-loop');
    await client.sendMail({
      envelope: { from: 'sender@origin.test', to: ['info@fwd.acme.test'] },
      raw: message(other, { headers: ['X-Mailroom-Loop: sales@strict.acme.test'] }),
    });
    await sink.waitFor((m) => m.parsed?.subject === other);
  });

  it('returns a bounce sent to the SRS address to the original sender, and refuses a forged one exactly as an unknown address', async () => {
    const s = subject('to-bounce');
    await client.sendMail({ envelope: { from: 'Orig.Sender@origin.test', to: ['info@fwd.acme.test'] }, raw: message(s) });
    const forwarded = await sink.waitFor((m) => m.parsed?.subject === s);
    const srsAddress = forwarded.envelope.mailFrom;

    const bounceSubject = subject('bounce');
    const bounce = Buffer.from(
      `From: MAILER-DAEMON@dest.test\r\nTo: ${srsAddress}\r\nSubject: ${bounceSubject}\r\nMessage-ID: <b${Date.now()}@dest.test>\r\n\r\nThe mail could not be delivered.\r\n`,
    );
    // Lower-cased on the way, as some MTAs do: still ours.
    await client.sendMail({ envelope: { from: '', to: [srsAddress.toLowerCase()] }, raw: bounce });
    const returned = await sink.waitFor((m) => m.parsed?.subject === bounceSubject);
    // The original sender as the lower-cased SRS address spells it (domains and most mailboxes ignore case).
    expect(returned.envelope.rcptTo).toEqual(['orig.sender@origin.test']);
    expect(returned.envelope.mailFrom).toBe('');

    // A forger learns nothing from the answer: word for word what an address nobody has gets.
    const forged = srsAddress.replace(/^SRS0=(.)/, (_, c: string) => `SRS0=${c === 'A' ? 'B' : 'A'}`);
    const [, stamp, rest] = /^SRS0=[A-Z2-7]{8}=([A-Z2-7]{2})=(.*)$/.exec(srsAddress)!;
    const expired = `SRS0=AAAAAAAA=${stamp === 'AA' ? 'AB' : 'AA'}=${rest}`;
    const legacyLength = `SRS0=AAAA=${stamp}=${rest}`;
    const unknown = await refusal({ from: '', to: [`nobody@${strictDomain}`] }, bounce);
    expect(unknown.responseCode).toBe(550);
    for (const address of [forged, expired, legacyLength]) {
      const answer = await refusal({ from: '', to: [address] }, bounce);
      expect(answer.responseCode).toBe(550);
      expect(answer.response.replace(address, '<address>')).toBe(unknown.response.replace(`nobody@${strictDomain}`, '<address>'));
    }
  });

  it('marks a message bounced from a DSN sent to its VERP return path, suppresses the recipient, and keeps a delayed one a deferral', async () => {
    const s = subject('api-send');
    const sent = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to: ['gone@remote.test', 'slow@remote.test'], subject: s, text: 'hi' })
      .expect(200);
    const messageId: string = sent.body.messageId;
    const outgoing = await sink.waitFor((m) => m.parsed?.subject === s);
    const returnPath = outgoing.envelope.mailFrom;
    expect(returnPath).toMatch(/^bounces\+[a-z2-7.-]+@mailroom\.test$/);
    const statusOf = async () => (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey))).body;
    await waitFor('the message sent', statusOf, (body) => body.status === 'sent');

    const dsn = (recipient: string, action: string, status: string, diagnostic: string) =>
      deliveryStatusReport({
        to: returnPath,
        recipient,
        action,
        status,
        diagnostic,
        originalHeaders: [`Message-ID: ${outgoing.parsed?.messageId}`, `Subject: ${s}`],
        reportingDomain: 'remote.test',
      });

    await client.sendMail({
      envelope: { from: '', to: [returnPath] },
      raw: dsn('slow@remote.test', 'delayed', '4.2.2', '452 4.2.2 Mailbox full'),
    });
    await client.sendMail({
      envelope: { from: '', to: [returnPath] },
      raw: dsn('gone@remote.test', 'failed', '5.1.1', '550 5.1.1 No such user'),
    });

    const status = await waitFor('the bounce recorded', statusOf, (body) =>
      body.events.some((e: { type: string }) => e.type === 'bounced'),
    );
    // One of two recipients bounced: the message stays sent, the events tell.
    expect(status.status).toBe('sent');
    expect(status.events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'bounced', recipient: 'gone@remote.test', detail: expect.stringContaining('5.1.1') }),
        expect.objectContaining({ type: 'deferred', recipient: 'slow@remote.test' }),
      ]),
    );
    const hook = await waitForValue('the bounced webhook', () => hooks.find((h) => h.type === 'bounced' && h.messageId === messageId));
    expect(hook.recipient).toBe('gone@remote.test');
    const suppressed = await t.http.get('/email/suppression/check').query({ email: 'gone@remote.test' }).set(bearer(adminKey)).expect(200);
    expect(suppressed.body).toMatchObject({ suppressed: true, reason: 'bounced' });
    const notSuppressed = await t.http
      .get('/email/suppression/check')
      .query({ email: 'slow@remote.test' })
      .set(bearer(adminKey))
      .expect(200);
    expect(notSuppressed.body.suppressed).toBe(false);

    // The second recipient bounces too: now the message is bounced.
    await client.sendMail({
      envelope: { from: '', to: [returnPath.toUpperCase()] },
      raw: dsn('slow@remote.test', 'failed', '5.2.1', '550 5.2.1 Disabled'),
    });
    await waitFor('the message bounced', statusOf, (body) => body.status === 'bounced');

    // A made-up return path is nobody's.
    const tampered = returnPath.replace(/^bounces\+./, (m) => (m.endsWith('a') ? 'bounces+b' : 'bounces+a'));
    expect((await refusal({ from: '', to: [tampered] }, dsn('x@remote.test', 'failed', '5.1.1', 'x'))).responseCode).toBe(550);
  });

  it('refuses connections over the per-address limit with 421', async () => {
    const sockets: Socket[] = [];
    const greeting = (socket: Socket) => new Promise<string>((resolve) => socket.once('data', (data) => resolve(data.toString())));
    try {
      for (let i = 0; i < MAX_CONNECTIONS_PER_IP; i++) {
        const socket = connect(port, '127.0.0.1');
        sockets.push(socket);
        expect(await greeting(socket)).toMatch(/^220 /);
      }
      const extra = connect(port, '127.0.0.1');
      sockets.push(extra);
      expect(await greeting(extra)).toMatch(/^421 4\.7\.0/);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  describe('GET /domains/{domain}/forwarding/resolve', () => {
    const resolve = (d: string, address: string) => t.http.get(`/domains/${d}/forwarding/resolve`).query({ address }).set(bearer(adminKey));

    it('tells which rule an address matches and where it goes', async () => {
      expect((await resolve(domain, 'Info@fwd.acme.test').expect(200)).body).toEqual({
        address: 'Info@fwd.acme.test',
        domain,
        domainVerified: true,
        matched: true,
        rule: 'info',
        destinations: ['ada@dest.test', 'bob@dest.test'],
        accepted: true,
        explanation: 'Info@fwd.acme.test matches the alias info and goes to ada@dest.test, bob@dest.test',
      });
      expect((await resolve(domain, 'info+news')).body).toMatchObject({ rule: 'info', address: 'info+news@fwd.acme.test' });
      expect((await resolve(domain, 'random')).body).toMatchObject({ rule: '*', destinations: ['catch@dest.test'] });
    });

    it('says so when nothing matches, or the domain is not verified', async () => {
      expect((await resolve(strictDomain, 'nobody').expect(200)).body).toMatchObject({
        matched: false,
        rule: null,
        destinations: [],
        accepted: false,
        explanation: expect.stringContaining('refused (550 5.1.1)'),
      });
      expect((await resolve('pending.acme.test', 'info').expect(200)).body).toMatchObject({
        matched: true,
        domainVerified: false,
        accepted: false,
      });
    });

    it('answers 400 for an address on another domain or none, 404 for a domain the account does not have', async () => {
      expect((await resolve(domain, 'info@other.test').expect(400)).body.error.code).toBe('VALIDATION_FAILED');
      expect((await t.http.get(`/domains/${domain}/forwarding/resolve`).set(bearer(adminKey)).expect(400)).body.error.code).toBe(
        'VALIDATION_FAILED',
      );
      expect((await resolve('unknown.acme.test', 'info').expect(404)).body.error.code).toBe('NOT_FOUND');
    });
  });
});
