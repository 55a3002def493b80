import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PeerCertificate } from 'node:tls';
import nodemailer, { type Transporter } from 'nodemailer';
import { generate } from 'selfsigned';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { rawMessage } from '../support/raw-message';
import { SmtpSession } from '../support/smtp-session';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

const HOSTNAME = 'mx.edge.test';
const MAX_MESSAGE_BYTES = 100_000;
const PER_SENDER = 10;
const PER_DOMAIN = 25;
/** Connections the flood tests send over at once. */
const POOL = 5;

/**
 * Limits are checked at RCPT TO and counted at the commit: the transactions in flight at once may each pass the check,
 * so a burst over POOL connections can overshoot a limit by POOL - 1, never more.
 */
function expectWithinOvershoot(taken: number, limit: number): void {
  expect(taken).toBeGreaterThanOrEqual(limit);
  expect(taken).toBeLessThanOrEqual(limit + POOL - 1);
}

/** The header section of a message as it arrived. */
const headerOf = (raw: Buffer) => raw.toString('latin1').split('\r\n\r\n')[0];

describe('Forwarding: STARTTLS, loop tokens, hourly limits and SIZE at the inbound SMTP server', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let port: number;
  let tlsDir: string;
  const sessions: SmtpSession[] = [];
  const transports: Transporter[] = [];
  const others: TestApp[] = [];
  let subjectCounter = 0;
  const subject = (label: string) => `${label} ${++subjectCounter} ${Date.now()}`;

  beforeAll(async () => {
    tlsDir = mkdtempSync(join(tmpdir(), 'mailroom-edge-tls-'));
    sink = await startSmtpSink();
    port = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        INBOUND_SMTP_HOSTNAME: HOSTNAME,
        INBOUND_SMTP_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
        INBOUND_SMTP_MAX_MESSAGES_PER_SENDER_PER_HOUR: String(PER_SENDER),
        INBOUND_SMTP_MAX_MESSAGES_PER_DOMAIN_PER_HOUR: String(PER_DOMAIN),
        EMAIL_RETRY_FIRST_DELAY_MS: '50',
      },
    });
    const account = await createAccount(t, 'Edge');
    const rules: Record<string, Record<string, string[]>> = {
      'edge.test': { info: ['ada@dest.test'], secretalias: ['sec@dest.test'] },
      'busy.test': { info: ['busy@dest.test'] },
      'calm.test': { info: ['calm@dest.test'] },
      'quiet.test': { info: ['quiet@dest.test'] },
      'hushed.test': { info: ['hushed@dest.test'] },
    };
    for (const [domain, forwarding] of Object.entries(rules)) {
      await createVerifiedDomain(t, account.accountId, domain);
      await t.http.put(`/domains/${domain}`).set(bearer(account.adminKey)).send({ forwarding }).expect(200);
    }
  });

  afterEach(() => {
    for (const session of sessions.splice(0)) session.close();
    for (const transport of transports.splice(0)) transport.close();
  });

  afterAll(async () => {
    for (const other of others) await other.close();
    await t?.close();
    await sink?.close();
    rmSync(tlsDir, { recursive: true, force: true });
  });

  async function open(on = port): Promise<{ session: SmtpSession; greeting: string }> {
    const opened = await SmtpSession.open(on);
    sessions.push(opened.session);
    return opened;
  }

  /** EHLO on a new session of `on`, and the certificate STARTTLS presents (null when EHLO offers no STARTTLS). */
  async function certificateOf(on: number): Promise<{ ehlo: string; certificate: PeerCertificate | null }> {
    const { session } = await open(on);
    const ehlo = await session.command('EHLO client.test');
    return { ehlo, certificate: /^250[- ]STARTTLS\r?$/m.test(ehlo) ? await session.startTls(HOSTNAME) : null };
  }

  function transport(options: Record<string, unknown> = {}): Transporter {
    const made = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, ...options });
    transports.push(made);
    return made;
  }

  /** Sends each message at once over a pool of POOL connections: which were taken, and the refusals of the others. */
  async function sendAll(messages: { from: string; to: string; raw: Buffer }[]) {
    const pool = transport({ pool: true, maxConnections: POOL, maxMessages: Infinity });
    const results = await Promise.allSettled(messages.map((m) => pool.sendMail({ envelope: { from: m.from, to: [m.to] }, raw: m.raw })));
    return {
      taken: results.filter((r) => r.status === 'fulfilled').length,
      refusals: results.flatMap((r) => (r.status === 'rejected' ? [r.reason as { responseCode: number; response: string }] : [])),
    };
  }

  const inboundFrom = async (sender: string) =>
    Number((await t.app.get(DataSource).query('SELECT count(*) AS n FROM inbound_messages WHERE mail_from = $1', [sender]))[0].n);

  describe('STARTTLS', () => {
    // The other instances work the same queues: one with another ENCRYPTION_KEY could not sign later tests' mail.
    afterAll(async () => {
      for (const other of others.splice(0)) await other.close();
    });

    it('is offered without a configured certificate: a self-signed one for the host name, made once and kept for every instance', async () => {
      const first = await certificateOf(port);
      expect(first.ehlo).toMatch(/^250-STARTTLS\r$/m);
      const certificate = first.certificate!;
      expect(certificate.subject.CN).toBe(HOSTNAME);
      expect(certificate.issuer.CN).toBe(HOSTNAME);
      expect(certificate.subjectaltname).toBe(`DNS:${HOSTNAME}`);

      // Kept in PostgreSQL, its private key sealed.
      const rows = await t.app.get(DataSource).query('SELECT hostname, private_key, fingerprint FROM inbound_tls_certificates');
      expect(rows).toEqual([{ hostname: HOSTNAME, private_key: expect.stringMatching(/^v1\./), fingerprint: certificate.fingerprint256 }]);
      expect(rows[0].private_key).not.toContain('PRIVATE KEY');

      // Another instance (another worker, or this one restarted) presents the same certificate.
      const secondPort = await freePort();
      others.push(await createTestApp({ shareWith: t, env: { INBOUND_SMTP_PORT: String(secondPort) } }));
      const second = await certificateOf(secondPort);
      expect(second.certificate!.fingerprint256).toBe(certificate.fingerprint256);
    });

    it('upgrades a real client that requires TLS, and the forwarded message says ESMTPS', async () => {
      const s = subject('over tls');
      const client = transport({ ignoreTLS: false, requireTLS: true, tls: { rejectUnauthorized: false } });
      const info = await client.sendMail({
        envelope: { from: 'tls@origin.test', to: ['info@edge.test'] },
        raw: rawMessage('info@edge.test', s),
      });
      expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
      const mail = await sink.waitFor((m) => m.parsed?.subject === s);
      expect(headerOf(mail.raw)).toMatch(/\r\n\tby mx\.edge\.test \(Mailroom\) with ESMTPS id inb_/);
    });

    /** Starts another instance on the same database and Redis, with its own inbound port: the certificate it presents. */
    async function startOther(env: Record<string, string> = {}): Promise<PeerCertificate> {
      const otherPort = await freePort();
      others.push(await createTestApp({ shareWith: t, env: { INBOUND_SMTP_PORT: String(otherPort), ...env } }));
      return (await certificateOf(otherPort)).certificate!;
    }

    const storedCertificates = () => t.app.get(DataSource).query('SELECT fingerprint FROM inbound_tls_certificates');

    it('gives instances that start together one certificate, and replaces it at start when near its end or unreadable', async () => {
      await t.app.get(DataSource).query('DELETE FROM inbound_tls_certificates');
      const [a, b] = await Promise.all([startOther(), startOther()]);
      expect(a.fingerprint256).toBe(b.fingerprint256);
      expect(await storedCertificates()).toEqual([{ fingerprint: a.fingerprint256 }]);

      // 30 days before its end it is replaced, for every instance started from then on.
      await t.app.get(DataSource).query(`UPDATE inbound_tls_certificates SET not_after = now() + interval '10 days'`);
      const renewed = await startOther();
      expect(renewed.fingerprint256).not.toBe(a.fingerprint256);
      expect(await storedCertificates()).toEqual([{ fingerprint: renewed.fingerprint256 }]);

      // ENCRYPTION_KEY changed without ENCRYPTION_KEY_PREVIOUS: the sealed key cannot be opened; a new one is made.
      const rekeyed = await startOther({ ENCRYPTION_KEY: randomBytes(32).toString('hex') });
      expect(rekeyed.fingerprint256).not.toBe(renewed.fingerprint256);
      expect(rekeyed.subject.CN).toBe(HOSTNAME);
      expect(await storedCertificates()).toEqual([{ fingerprint: rekeyed.fingerprint256 }]);
    });

    it('presents a configured certificate instead, and none with INBOUND_SMTP_STARTTLS=false', async () => {
      const configured = await generate([{ name: 'commonName', value: 'configured.edge.test' }], { keySize: 2048, algorithm: 'sha256' });
      writeFileSync(join(tlsDir, 'cert.pem'), configured.cert);
      writeFileSync(join(tlsDir, 'key.pem'), configured.private);
      const withFiles = await freePort();
      const off = await freePort();
      others.push(
        await createTestApp({
          shareWith: t,
          env: {
            INBOUND_SMTP_PORT: String(withFiles),
            INBOUND_SMTP_TLS_CERT: join(tlsDir, 'cert.pem'),
            INBOUND_SMTP_TLS_KEY: join(tlsDir, 'key.pem'),
          },
        }),
        await createTestApp({ shareWith: t, env: { INBOUND_SMTP_PORT: String(off), INBOUND_SMTP_STARTTLS: 'false' } }),
      );
      expect((await certificateOf(withFiles)).certificate!.subject.CN).toBe('configured.edge.test');

      const plain = await certificateOf(off);
      expect(plain.ehlo).not.toContain('STARTTLS');
      expect(plain.certificate).toBeNull();
    });
  });

  it('writes an opaque loop token per alias: the copy at one destination does not name an alias it was Bcc’d to, and a loop is still refused 554 5.4.6', async () => {
    const s = subject('bcc');
    // To: names info only; secretalias is a Bcc (only in the envelope).
    await transport().sendMail({
      envelope: { from: 'bcc@origin.test', to: ['info@edge.test', 'secretalias@edge.test'] },
      raw: rawMessage('info@edge.test', s),
    });
    const copy = await sink.waitFor((m) => m.parsed?.subject === s && m.envelope.rcptTo.includes('ada@dest.test'));
    const header = headerOf(copy.raw);
    expect(header).not.toMatch(/secretalias/i);
    const loopFields = header.match(/^X-Mailroom-Loop: .*$/gm) ?? [];
    expect(loopFields).toHaveLength(2);
    for (const field of loopFields) expect(field).toMatch(/^X-Mailroom-Loop: [a-z2-7]{16}$/);

    // The copy comes back (a destination forwarding to the alias again): refused for either alias, as a loop.
    for (const alias of ['secretalias@edge.test', 'INFO@edge.test']) {
      const refused = await transport()
        .sendMail({ envelope: { from: 'bcc@origin.test', to: [alias] }, raw: copy.raw })
        .then(
          () => null,
          (err: { responseCode: number; response: string }) => err,
        );
      expect(refused).toMatchObject({ responseCode: 554, response: expect.stringMatching(/^554 5\.4\.6 Routing loop detected/) });
    }
    // For an address it was never forwarded for, it is no loop.
    const info = await transport().sendMail({ envelope: { from: 'bcc@origin.test', to: ['info@calm.test'] }, raw: copy.raw });
    expect(info.response).toMatch(/^250 /);
  });

  it('refuses a SIZE= over the limit at MAIL FROM with 552 5.3.4, and takes one within it', async () => {
    const { session, greeting } = await open();
    expect(greeting).toMatch(/^220 /);
    expect(await session.command('EHLO client.test')).toMatch(/^250[- ]SIZE\r$/m);
    expect(await session.command(`MAIL FROM:<big@origin.test> SIZE=${MAX_MESSAGE_BYTES + 1}`)).toBe(
      `552 5.3.4 Message too big: the limit is ${MAX_MESSAGE_BYTES} bytes\r\n`,
    );
    expect(await session.command(`MAIL FROM:<big@origin.test> SIZE=${MAX_MESSAGE_BYTES}`)).toMatch(/^250 /);
    expect(await session.command('RCPT TO:<info@calm.test>')).toMatch(/^250 /);
  });

  describe('hourly limits (451 4.7.1 past them)', () => {
    it(`takes ${PER_SENDER} of 40 messages one sender sends within a second to a domain (and those in flight); another sender is still taken`, async () => {
      const started = Date.now();
      const flood = Array.from({ length: 40 }, () => ({
        from: 'flood@origin.test',
        to: 'info@edge.test',
        raw: rawMessage('info@edge.test', subject('flood')),
      }));
      const { taken, refusals } = await sendAll(flood);
      const elapsed = Date.now() - started;
      expect(elapsed).toBeLessThan(5000);
      expectWithinOvershoot(taken, PER_SENDER);
      expect(refusals).toHaveLength(40 - taken);
      for (const refusal of refusals) {
        expect(refusal.responseCode).toBe(451);
        expect(refusal.response).toMatch(
          new RegExp(
            `^451 4\\.7\\.1 Too many messages from <flood@origin\\.test> to edge\\.test: the limit is ${PER_SENDER} an hour, try again in \\d+ min`,
          ),
        );
      }
      expect(await inboundFrom('flood@origin.test')).toBe(taken);

      const s = subject('other sender');
      await transport().sendMail({ envelope: { from: 'calm@origin.test', to: ['info@edge.test'] }, raw: rawMessage('info@edge.test', s) });
      await sink.waitFor((m) => m.parsed?.subject === s);
    });

    it(`takes ${PER_DOMAIN} messages an hour for a domain from all senders (and those in flight); another domain is still taken`, async () => {
      const burst = Array.from({ length: 40 }, (_, i) => ({
        from: `sender${i}@origin.test`,
        to: 'info@busy.test',
        raw: rawMessage('info@busy.test', subject('busy')),
      }));
      const { taken, refusals } = await sendAll(burst);
      expectWithinOvershoot(taken, PER_DOMAIN);
      expect(refusals).toHaveLength(40 - taken);
      for (const refusal of refusals) {
        expect(refusal.responseCode).toBe(451);
        expect(refusal.response).toMatch(
          new RegExp(`^451 4\\.7\\.1 Too many messages for busy\\.test: the limit is ${PER_DOMAIN} an hour`),
        );
      }

      const s = subject('other domain');
      await transport().sendMail({
        envelope: { from: 'sender0@origin.test', to: ['info@calm.test'] },
        raw: rawMessage('info@calm.test', s),
      });
      await sink.waitFor((m) => m.parsed?.subject === s);
    });

    it('spends nothing on transactions without DATA: 50 RCPT TO then RSET leave the domain and the sender their allowance', async () => {
      const { session } = await open();
      expect(await session.command('EHLO client.test')).toMatch(/^250/);
      // A sender of its own each time (only the domain's allowance could be spent), then one sender over and over.
      const senders = [...Array.from({ length: 50 }, (_, i) => `probe${i}@origin.test`), ...Array(20).fill('probe@origin.test')];
      for (const sender of senders) {
        expect(await session.command(`MAIL FROM:<${sender}>`)).toMatch(/^250 /);
        expect(await session.command('RCPT TO:<info@quiet.test>')).toMatch(/^250 /);
        expect(await session.command('RSET')).toMatch(/^250 /);
      }

      const s = subject('after probes');
      const info = await transport().sendMail({
        envelope: { from: 'probe@origin.test', to: ['info@quiet.test'] },
        raw: rawMessage('info@quiet.test', s),
      });
      expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
      await sink.waitFor((m) => m.parsed?.subject === s);
    });

    it(`spends nothing on messages refused at DATA: ${PER_DOMAIN + 5} too big for the limit, then one is taken`, async () => {
      const { session } = await open();
      expect(await session.command('EHLO client.test')).toMatch(/^250/);
      const line = `${'x'.repeat(76)}\r\n`;
      const tooBig = rawMessage('info@hushed.test', 'too big', { body: line.repeat(Math.ceil(MAX_MESSAGE_BYTES / line.length)) });
      for (let i = 0; i < PER_DOMAIN + 5; i++) {
        expect(await session.command(`MAIL FROM:<big${i}@origin.test>`)).toMatch(/^250 /);
        expect(await session.command('RCPT TO:<info@hushed.test>')).toMatch(/^250 /);
        expect(await session.command('DATA')).toMatch(/^354 /);
        expect(await session.command(`${tooBig.toString('latin1')}\r\n.`)).toMatch(/^552 5\.3\.4 /);
      }

      const s = subject('after refusals');
      const info = await transport().sendMail({
        envelope: { from: 'big0@origin.test', to: ['info@hushed.test'] },
        raw: rawMessage('info@hushed.test', s),
      });
      expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
    });
  });
});
