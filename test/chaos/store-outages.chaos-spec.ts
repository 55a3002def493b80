import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { PrivatePostgres, PrivateRedis, startPrivatePostgres, startPrivateRedis, waitUntil } from './support/private-servers';
import { deliveredCounts, duplicated, missing, startSendStream, unexpectedAnswers, waitForReadiness } from './support/send-stream';

// A stream of sends through a Redis crash (every key lost) and a PostgreSQL restart, on servers of this test's
// own: every answer is a 200 or a refusal with Retry-After, every accepted message arrives exactly once,
// and /health/ready reports the outage and the recovery.
/** Longer than deliveredCounts' own wait, so that a message that never arrives fails naming it, not as a time-out. */
const TEST_TIMEOUT_MS = 120_000;

describe('store outages', () => {
  let redis: PrivateRedis;
  let postgres: PrivatePostgres;
  let sink: SmtpSink;
  let t: TestApp;
  let adminKey: string;
  const domain = 'chaos.acme.test';

  beforeAll(async () => {
    [redis, postgres, sink] = await Promise.all([startPrivateRedis(), startPrivatePostgres(), startSmtpSink()]);
    t = await createTestApp({
      stores: { databaseUrl: postgres.url('mailroom'), redisUrl: redis.url },
      env: {
        SMTP_URL: sink.url,
        RATE_LIMIT_ENABLED: 'true',
        DEFAULT_ACCOUNT_TIER: 'enterprise',
        EMAIL_RETRY_FIRST_DELAY_MS: '20',
        EMAIL_SWEEP_INTERVAL_MS: '300',
        // Messages accepted while Redis was away must be queued when it is back, not a minute later.
        EMAIL_SWEEP_AFTER_MS: '60000',
        QUEUE_LOCK_MS: '2000',
      },
    });
    const account = await createAccount(t, 'Chaos');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await Promise.all([redis?.close(), postgres?.close(), sink?.close()]);
  });

  it(
    'keeps accepting sends through a Redis crash and delivers each accepted one once',
    async () => {
      const stream = startSendStream(t.http, adminKey, `hello@${domain}`, `redis-${randomBytes(3).toString('hex')}`);
      await new Promise((r) => setTimeout(r, 1000));

      await redis.stop();
      const outageStart = Date.now();
      const down = await waitForReadiness(t.http, (status) => status === 503);
      expect(down.body.checks.redis).toBe('down');
      await new Promise((r) => setTimeout(r, 2000));
      await redis.start();
      const outageEnd = Date.now();
      await waitForReadiness(t.http, (status, body) => status === 200 && body.checks.redis === 'up');
      await new Promise((r) => setTimeout(r, 1000));

      const outcomes = await stream.stop();
      expect(unexpectedAnswers(outcomes)).toEqual([]);
      const accepted = outcomes.filter((o) => o.status === 200);
      const acceptedDuringOutage = accepted.filter((o) => o.at > outageStart + 200 && o.at < outageEnd);
      expect(acceptedDuringOutage.length).toBeGreaterThan(10);

      const counts = await deliveredCounts(
        sink,
        accepted.map((o) => o.subject),
      );
      expect(missing(counts)).toEqual([]);
      expect(duplicated(counts)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'answers 503 with Retry-After while PostgreSQL restarts, and delivers each accepted message once',
    async () => {
      const stream = startSendStream(t.http, adminKey, `hello@${domain}`, `postgres-${randomBytes(3).toString('hex')}`);
      await new Promise((r) => setTimeout(r, 1000));

      await postgres.stop();
      const down = await waitForReadiness(t.http, (status) => status === 503);
      expect(down.body.checks.postgres).toBe('down');
      await new Promise((r) => setTimeout(r, 2000));
      await postgres.start();
      await waitForReadiness(t.http, (status, body) => status === 200 && body.checks.postgres === 'up');
      await new Promise((r) => setTimeout(r, 1000));

      const outcomes = await stream.stop();
      expect(unexpectedAnswers(outcomes)).toEqual([]);
      const refused = outcomes.filter((o) => o.status === 503);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.every((o) => o.code === 'SERVICE_UNAVAILABLE')).toBe(true);

      const accepted = outcomes.filter((o) => o.status === 200);
      const counts = await deliveredCounts(
        sink,
        accepted.map((o) => o.subject),
      );
      expect(missing(counts)).toEqual([]);
      expect(duplicated(counts)).toEqual([]);
      // The sink takes a message a moment before the worker writes its row: wait for the rows to settle.
      const statusCounts = (): Promise<{ status: string; n: number }[]> =>
        t.app.get(DataSource).query(`SELECT status, count(*)::int AS n FROM messages WHERE subject LIKE 'postgres-%' GROUP BY status`);
      await waitUntil('the delivered messages’ rows', async () => (await statusCounts()).every((row) => row.status === 'sent')).catch(
        () => undefined,
      );
      expect(await statusCounts()).toEqual([{ status: 'sent', n: accepted.length }]);
    },
    TEST_TIMEOUT_MS,
  );
});
