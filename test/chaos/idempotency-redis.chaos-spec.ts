import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { counterKey, windowOf } from '../../src/quotas/quota-policy';
import { QuotaStore } from '../../src/quotas/quota.store';
import { RedisService } from '../../src/redis/redis.service';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { deleteKeys } from '../support/global-teardown';
import { createTestApp, TestApp } from '../support/test-app';
import { databaseUrl, dropDatabase } from '../support/test-env';
import { PrivateRedis, startPrivateRedis, waitUntil } from './support/private-servers';

interface Tenant {
  accountId: string;
  adminKey: string;
  domain: string;
}

// An Idempotency-Key's answer lives in PostgreSQL with what the request did; Redis (a redis-server of this test's
// own, keeping nothing on disk) only caches it. A retry after Redis lost every key, or calls made while it is
// away, act once and replay the first answer.
describe('Idempotency-Key when Redis forgets or is away', () => {
  let redis: PrivateRedis;
  let redisRunning = true;
  let probe: Redis;
  let t: TestApp;
  const database = `mailroom_chaos_idempotency_${randomBytes(4).toString('hex')}`;
  const unique = () => randomBytes(5).toString('hex');

  beforeAll(async () => {
    redis = await startPrivateRedis();
    probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    probe.on('error', () => undefined);
    t = await createTestApp({
      stores: { databaseUrl: databaseUrl(database), redisUrl: redis.url },
      env: { QUOTAS_ENABLED: 'true', APP_ROLE: 'api' },
    });
  }, 60_000);

  afterEach(async () => {
    if (!redisRunning) await startRedis();
  });

  afterAll(async () => {
    await t?.close();
    probe?.disconnect();
    await redis?.close();
    await dropDatabase(database);
  });

  const appRedisReady = () => Promise.resolve(t.app.get(RedisService).client.status === 'ready');

  async function stopRedis(): Promise<void> {
    await redis.stop();
    redisRunning = false;
    await waitUntil('the app to see Redis gone', async () => !(await appRedisReady()));
  }

  async function startRedis(): Promise<void> {
    await redis.start();
    redisRunning = true;
    await waitUntil('the app back on Redis', appRedisReady);
  }

  async function tenant(name: string): Promise<Tenant> {
    const account = await createAccount(t, name);
    const domain = `${unique()}.idempotency-chaos.test`;
    await createVerifiedDomain(t, account.accountId, domain);
    return { ...account, domain };
  }

  const report = (who: Tenant, idempotencyKey: string, emailCount: number) =>
    t.http
      .post('/api/billing/usage')
      .set(bearer(who.adminKey))
      .set('Idempotency-Key', idempotencyKey)
      .timeout(10_000)
      .send({ tenantId: who.accountId, emailCount });

  const send = (who: Tenant, idempotencyKey: string, subject: string) =>
    t.http
      .post('/email/send')
      .set(bearer(who.adminKey))
      .set('Idempotency-Key', idempotencyKey)
      .timeout(10_000)
      .send({ from: `hello@${who.domain}`, to: 'ada@example.org', subject, text: 'x' });

  /** The month's emails as billing and GET /settings answer them (both read PostgreSQL). */
  async function counted(who: Tenant): Promise<{ billed: number; quota: number }> {
    const info = await t.http.get('/api/billing/info').set(bearer(who.adminKey)).query({ tenantId: who.accountId }).expect(200);
    const settings = await t.http.get('/settings').set(bearer(who.adminKey)).expect(200);
    return { billed: info.body.currentPeriod.emailsSent, quota: settings.body.quotas.emails_per_month.used };
  }

  /** The account's emails-per-month quota counter in Redis. */
  async function monthCounter(who: Tenant): Promise<number> {
    const key = counterKey((...parts) => t.app.get(RedisService).key(...parts), who.accountId, 'emails', windowOf('month', Date.now()).id);
    return Number(await probe.get(t.app.get(QuotaStore).runKey(key)));
  }

  it('replays a usage record after Redis restarted with nothing kept, and counts it once', async () => {
    const who = await tenant('Restart');
    const idempotencyKey = `usage-${unique()}`;
    const first = await report(who, idempotencyKey, 40).expect(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    await stopRedis();
    await startRedis();
    expect(await probe.dbsize()).toBe(0);

    const retry = await report(who, idempotencyKey, 40).expect(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(await counted(who)).toEqual({ billed: 40, quota: 40 });
    // Cached again: another body under the key is still a conflict.
    expect((await report(who, idempotencyKey, 41).expect(409)).body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('replays a usage record whose Redis entry alone was lost, without moving the quota counters again', async () => {
    const who = await tenant('Evicted');
    // A send loads the account's counters into Redis: a reported usage adds to them from then on.
    await send(who, `send-${unique()}`, 'loads the counters').expect(200);
    const idempotencyKey = `usage-${unique()}`;
    const first = await report(who, idempotencyKey, 40).expect(200);
    expect(await monthCounter(who)).toBe(41);

    await deleteKeys(probe, t.app.get(RedisService).key('idempotency', '*'));
    const retry = await report(who, idempotencyKey, 40).expect(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(await counted(who)).toEqual({ billed: 41, quota: 41 });
    expect(await monthCounter(who)).toBe(41);
  });

  it('counts a usage record once while Redis is down: a retry, and calls racing each other, get the first answer', async () => {
    const who = await tenant('Outage');
    await stopRedis();

    const idempotencyKey = `usage-${unique()}`;
    const first = await report(who, idempotencyKey, 25).expect(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const retry = await report(who, idempotencyKey, 25).expect(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(first.body);

    for (let round = 0; round < 5; round++) {
      const raceKey = `race-${unique()}`;
      const racing = await Promise.all([1, 2, 3].map(() => report(who, raceKey, 3)));
      expect(racing.map((res) => res.status)).toEqual([200, 200, 200]);
      expect(racing.filter((res) => res.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      for (const res of racing) expect(res.body).toEqual(racing[0].body);
    }
    expect(await counted(who)).toEqual({ billed: 25 + 5 * 3, quota: 25 + 5 * 3 });

    await startRedis();
    const afterwards = await report(who, idempotencyKey, 25).expect(200);
    expect(afterwards.headers['idempotent-replayed']).toBe('true');
    expect(afterwards.body).toEqual(first.body);
    expect(await counted(who)).toEqual({ billed: 40, quota: 40 });
  });

  it('accepts a send once while Redis is down or after it restarted, as it always did', async () => {
    const who = await tenant('Send');
    const messagesOf = async (subject: string) =>
      (
        await t.app
          .get(DataSource)
          .query<{ n: number }[]>('SELECT count(*)::int AS n FROM messages WHERE account_id = $1 AND subject = $2', [
            who.accountId,
            subject,
          ])
      )[0].n;

    await stopRedis();
    const subject = `outage ${unique()}`;
    const racing = await Promise.all([1, 2, 3].map(() => send(who, `send-${subject}`, subject)));
    expect(racing.map((res) => res.status)).toEqual([200, 200, 200]);
    for (const res of racing) expect(res.body).toEqual(racing[0].body);
    expect(await messagesOf(subject)).toBe(1);

    await startRedis();
    const retry = await send(who, `send-${subject}`, subject).expect(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(racing[0].body);
    expect(await messagesOf(subject)).toBe(1);
    expect(await counted(who)).toEqual({ billed: 1, quota: 1 });
  });
});
