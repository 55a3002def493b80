import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { rawMessage } from '../support/raw-message';
import { SmtpSession } from '../support/smtp-session';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

const MAX_CONNECTIONS = 8;
const MAX_CONNECTIONS_PER_IP = 5;
const DOMAIN = 'limits.acme.test';

describe('Forwarding: connection caps and spooling of the inbound SMTP server', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let port: number;
  let spoolDir: string;
  const clients: SmtpSession[] = [];

  beforeAll(async () => {
    spoolDir = mkdtempSync(join(tmpdir(), 'mailroom-spool-test-'));
    sink = await startSmtpSink();
    port = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        INBOUND_SMTP_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
        INBOUND_SMTP_MAX_CONNECTIONS_PER_IP: String(MAX_CONNECTIONS_PER_IP),
        INBOUND_SMTP_SPOOL_DIR: spoolDir,
        EMAIL_RETRY_FIRST_DELAY_MS: '50',
      },
    });
    const account = await createAccount(t, 'Limits');
    await createVerifiedDomain(t, account.accountId, DOMAIN);
    await t.http
      .put(`/domains/${DOMAIN}`)
      .set(bearer(account.adminKey))
      .send({ forwarding: { info: ['ada@dest.test'] } })
      .expect(200);
  });

  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  afterAll(async () => {
    await t?.close();
    await sink?.close();
    rmSync(spoolDir, { recursive: true, force: true });
  });

  async function open(from: string): Promise<string> {
    const { session: client, greeting } = await SmtpSession.open(port, from);
    clients.push(client);
    return greeting;
  }

  it('refuses connections past the cap for all clients with 421, whichever address they come from, and takes them again after', async () => {
    for (let i = 0; i < MAX_CONNECTIONS_PER_IP; i++) expect(await open('127.0.0.2')).toMatch(/^220 /);
    expect(await open('127.0.0.2')).toMatch(/^421 4\.7\.0 Too many connections from 127\.0\.0\.2/);
    for (let i = MAX_CONNECTIONS_PER_IP; i < MAX_CONNECTIONS; i++) expect(await open('127.0.0.3')).toMatch(/^220 /);
    expect(await open('127.0.0.4')).toMatch(/^421 4\.7\.0 Too many connections, try again later/);

    clients.shift()!.close();
    await waitFor(
      'a free session',
      () => open('127.0.0.4'),
      (greeting) => greeting.startsWith('220 '),
    );
  });

  it('spools a 20 MB message to disk while it arrives and forwards it intact, leaving no file behind', async () => {
    const subject = `big ${Date.now()}`;
    const body =
      (
        randomBytes(15 * 1024 * 1024)
          .toString('base64')
          .match(/.{1,76}/g) ?? []
      ).join('\r\n') + '\r\n';
    const raw = rawMessage(`info@${DOMAIN}`, subject, { body });
    expect(raw.length).toBeGreaterThan(20 * 1024 * 1024);

    const { session: client, greeting } = await SmtpSession.open(port, '127.0.0.5');
    clients.push(client);
    expect(greeting).toMatch(/^220 /);
    expect(await client.command('EHLO client.test')).toMatch(/^250/);
    expect(await client.command('MAIL FROM:<sender@origin.test>')).toMatch(/^250/);
    expect(await client.command(`RCPT TO:<info@${DOMAIN}>`)).toMatch(/^250/);
    expect(await client.command('DATA')).toMatch(/^354/);

    // Half the message sent: the server holds it in a file, not in memory.
    const half = Math.floor(raw.length / 2);
    await client.write(raw.subarray(0, half));
    const spooled = await waitFor(
      'the spool file',
      () => readdirSync(spoolDir).map((name) => statSync(join(spoolDir, name)).size),
      (sizes) => sizes.some((size) => size >= half - 1024 * 1024),
    );
    expect(spooled).toHaveLength(1);

    await client.write(raw.subarray(half));
    await client.write(Buffer.from('.\r\n'));
    expect(await client.reply()).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
    expect(readdirSync(spoolDir)).toEqual([]);

    const mail = await sink.waitFor((m) => m.parsed?.subject === subject, 60_000);
    expect(mail.envelope.rcptTo).toEqual(['ada@dest.test']);
    const tail = mail.raw.subarray(mail.raw.length - raw.length);
    expect(createHash('sha256').update(tail).digest('hex')).toBe(createHash('sha256').update(raw).digest('hex'));
  });
});
