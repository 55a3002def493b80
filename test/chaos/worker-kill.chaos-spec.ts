import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createVerifiedDomain } from '../support/email-fixtures';
import { createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitUntil } from './support/private-servers';
import { deliveredCounts, duplicated, missing, startSendStream, unexpectedAnswers } from './support/send-stream';

const CONCURRENCY = 4;

// A worker process SIGKILLed in the middle of a stream: its jobs go to another worker once their lock lapses.
// Nothing accepted is lost; a message can arrive twice only if it was between the provider's 250 and the
// write of its row when the worker died (at-least-once), so at most one per job the worker was running.
describe('worker killed', () => {
  let api: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  const workers: ChildProcess[] = [];
  const domain = 'kill.acme.test';

  beforeAll(async () => {
    sink = await startSmtpSink();
    api = await createTestApp({
      env: { APP_ROLE: 'api', QUEUE_LOCK_MS: '1000', EMAIL_SWEEP_INTERVAL_MS: '300', EMAIL_SWEEP_AFTER_MS: '3000' },
    });
    const account = await createAccount(api, 'Kill');
    adminKey = account.adminKey;
    await createVerifiedDomain(api, account.accountId, domain);
  });

  afterAll(async () => {
    for (const worker of workers) if (worker.exitCode === null) worker.kill('SIGKILL');
    await api.close();
    await sink.close();
  });

  /** src/worker.ts in a process of its own, on the API's database and Redis key space. */
  function startWorker(): ChildProcess {
    const worker = spawn(process.execPath, ['-r', '@swc-node/register', join('src', 'worker.ts')], {
      cwd: join(__dirname, '..', '..'),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...api.env,
        APP_ROLE: 'worker',
        SMTP_URL: sink.url,
        EMAIL_WORKER_CONCURRENCY: String(CONCURRENCY),
        EMAIL_RETRY_FIRST_DELAY_MS: '20',
      },
      stdio: 'ignore',
    });
    workers.push(worker);
    return worker;
  }

  it('delivers every accepted message after its worker is SIGKILLed mid-stream', async () => {
    const prefix = `kill-${randomBytes(3).toString('hex')}`;
    const first = startWorker();
    const stream = startSendStream(api.http, adminKey, `hello@${domain}`, prefix, 20);
    await waitUntil('the first worker delivering', () => Promise.resolve(sink.count >= 30), 30_000);

    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const deliveredAtKill = sink.count;
    await new Promise((r) => setTimeout(r, 500));
    startWorker();
    await new Promise((r) => setTimeout(r, 1500));

    const outcomes = await stream.stop();
    expect(unexpectedAnswers(outcomes)).toEqual([]);
    const accepted = outcomes.filter((o) => o.status === 200);
    expect(accepted.length).toBeGreaterThan(deliveredAtKill);

    const counts = await deliveredCounts(
      sink,
      accepted.map((o) => o.subject),
    );
    expect(missing(counts)).toEqual([]);
    expect(duplicated(counts).length).toBeLessThanOrEqual(CONCURRENCY);
  });
});
