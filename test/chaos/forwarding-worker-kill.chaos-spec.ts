import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { smtpGreets } from '../support/smtp-greeting';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitUntil } from './support/private-servers';
import { rawMessage } from '../support/raw-message';

const DOMAIN = 'fwd-kill.acme.test';
const DESTINATION = 'dest@x.test';

/** SIGKILLs the worker unless it is gone already; resolves once it has exited. */
function killed(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    worker.once('exit', () => resolve());
    worker.kill('SIGKILL');
  });
}

// The 250 of the inbound server means the message is committed; its delivery job then belongs to whichever
// worker holds it. A worker SIGKILLed mid-delivery (its SMTP transaction to the provider open, no 250 yet)
// leaves a locked job: once the lock lapses a fresh worker takes it and forwards the stored bytes.
describe('forwarding worker killed between the 250 and delivery', () => {
  let api: TestApp;
  /** The provider while the first worker runs: it takes the message's content and never answers. */
  let stalledSink: SmtpSink;
  let sink: SmtpSink;
  let inboundPort: number;
  let releaseStalled: (() => void) | undefined;
  const workers: ChildProcess[] = [];

  beforeAll(async () => {
    stalledSink = await startSmtpSink();
    sink = await startSmtpSink();
    inboundPort = await freePort();
    api = await createTestApp({
      env: {
        APP_ROLE: 'api',
        QUEUE_LOCK_MS: '1000',
        EMAIL_SWEEP_INTERVAL_MS: '300',
        EMAIL_SWEEP_AFTER_MS: '3000',
        INBOUND_SMTP_HOST: '127.0.0.1',
        INBOUND_SMTP_HOSTNAME: 'mx.mailroom.test',
      },
    });
    const account = await createAccount(api, 'Forward kill');
    await createVerifiedDomain(api, account.accountId, DOMAIN);
    await api.http
      .put(`/domains/${DOMAIN}`)
      .set(bearer(account.adminKey))
      .send({ forwarding: { info: [DESTINATION] } })
      .expect(200);
  });

  afterAll(async () => {
    await Promise.all(workers.map(killed));
    releaseStalled?.();
    await api?.close();
    await stalledSink?.close();
    await sink?.close();
  });

  /** src/worker.ts in a process of its own, on the API's database and Redis key space, delivering to `smtpUrl`. */
  async function startWorker(smtpUrl: string): Promise<ChildProcess> {
    const worker = spawn(process.execPath, ['-r', '@swc-node/register', join('src', 'worker.ts')], {
      cwd: join(__dirname, '..', '..'),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...api.env,
        APP_ROLE: 'worker',
        INBOUND_SMTP_PORT: String(inboundPort),
        SMTP_URL: smtpUrl,
        EMAIL_RETRY_FIRST_DELAY_MS: '20',
      },
      stdio: 'ignore',
    });
    workers.push(worker);
    await waitUntil(
      'the worker listening for inbound mail',
      async () => worker.exitCode === null && (await smtpGreets(inboundPort)),
      45_000,
    );
    return worker;
  }

  it('forwards a message taken with a 250 once, unchanged, after the worker delivering it is SIGKILLed', async () => {
    const hold = stalledSink.holdNext();
    releaseStalled = hold.release;
    const first = await startWorker(stalledSink.url);

    const subject = `kill-forward ${Date.now()}`;
    const raw = rawMessage(`info@${DOMAIN}`, subject, { body: 'Taken with a 250, then the worker died.\r\nSecond line.\r\n' });
    const client = nodemailer.createTransport({ host: '127.0.0.1', port: inboundPort, secure: false, ignoreTLS: true });
    const info = await client.sendMail({ envelope: { from: 'sender@origin.test', to: [`info@${DOMAIN}`] }, raw });
    client.close();
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);

    // The first worker is in the middle of delivering it: the provider has the content, not yet answered.
    let arrived = false;
    void hold.arrived.then(() => (arrived = true));
    await waitUntil('the first worker delivering to the provider', () => Promise.resolve(arrived), 20_000);
    await killed(first);
    expect(stalledSink.count).toBe(0);

    await startWorker(sink.url);
    const forwarded = await sink.waitFor((m) => m.parsed?.subject === subject, 30_000);
    expect(forwarded.envelope.rcptTo).toEqual([DESTINATION]);
    expect(forwarded.envelope.mailFrom).toMatch(
      new RegExp(`^SRS0=[A-Z2-7]{8}=[A-Z2-7]{2}=origin\\.test=sender@${DOMAIN.replace(/\./g, '\\.')}$`),
    );
    // The received bytes, whole, under the trace fields Mailroom adds on top.
    expect(forwarded.raw.subarray(forwarded.raw.length - raw.length).equals(raw)).toBe(true);
    const added = forwarded.raw.subarray(0, forwarded.raw.length - raw.length).toString('latin1');
    expect(added).toMatch(/X-Mailroom-Loop: [a-z2-7]{16}\r\n/);
    expect(added).not.toContain(`X-Mailroom-Loop: info@`);

    // Once: nothing more arrives after the lost-job sweep has had time to run again.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(sink.messages.filter((m) => m.parsed?.subject === subject)).toHaveLength(1);
    expect(stalledSink.count).toBe(0);
    const [row] = await api.app
      .get(DataSource)
      .query(`SELECT status FROM messages WHERE inbound_message_id = $1`, [info.response.match(/inb_\w+/)![0]]);
    expect(row.status).toBe('sent');
  }, 120_000);
});
