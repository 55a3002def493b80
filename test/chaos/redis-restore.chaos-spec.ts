import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { hashKey } from '../../src/auth/key-format';
import { filterBits } from '../../src/auth/known-keys.filter';
import { QuotaStore } from '../../src/quotas/quota.store';
import { RedisService } from '../../src/redis/redis.service';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { databaseUrl, dropDatabase } from '../support/test-env';
import { PrivateRedis, startPrivateRedis, waitUntil } from './support/private-servers';

const QUOTA = 40;

// A Redis that crashes and starts again from its last snapshot (RDB), on a redis-server of this test's own:
// what it restores is older than the truth. Quota counters restored lower than the usage must not admit more
// than the quota; the filter of known API keys, restored without the keys made since, must not refuse one.
describe('Redis restarting from an older snapshot', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  const database = `mailroom_chaos_restore_${randomBytes(4).toString('hex')}`;
  let tenant: { accountId: string; adminKey: string; domain: string };

  const withRedis = async <T>(use: (client: Redis) => Promise<T>): Promise<T> => {
    const client = new Redis(redis.url);
    try {
      return await use(client);
    } finally {
      client.disconnect();
    }
  };

  /** kill -9, then a start that loads the snapshot SAVE wrote; resolves once the app's connections are back. */
  const crashAndRestore = async () => {
    await redis.stop();
    await redis.start();
    const connections = [t.app.get(QuotaStore).connection, t.app.get(RedisService).client];
    await waitUntil('the app reconnected to Redis', () => Promise.resolve(connections.every((c) => c.status === 'ready')));
  };

  beforeAll(async () => {
    redis = await startPrivateRedis();
    t = await createTestApp({
      stores: { databaseUrl: databaseUrl(database), redisUrl: redis.url },
      // TRUST_PROXY: each check of the failed-authentication budget is its own client address (X-Forwarded-For).
      env: { QUOTAS_ENABLED: 'true', RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'loopback', APP_ROLE: 'api' },
    });
    const account = await createAccount(t, 'Restore chaos');
    const domain = 'restore-chaos.test';
    await t.app
      .get(DataSource)
      .query(`UPDATE accounts SET tier = 'enterprise', settings = $2 WHERE id = $1`, [
        account.accountId,
        { quotas: { emails_per_month: QUOTA } },
      ]);
    await createVerifiedDomain(t, account.accountId, domain);
    tenant = { ...account, domain };
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await redis?.close();
    await dropDatabase(database);
  });

  it('admits exactly the quota left after quota counters are restored lower than the usage', async () => {
    const statuses: number[] = [];
    const codes = new Set<string>();
    const send = async () => {
      const res = await t.http
        .post('/email/send')
        .set(bearer(tenant.adminKey))
        .timeout(10_000)
        .send({ from: `hello@${tenant.domain}`, to: 'ada@example.org', subject: 'restore', text: 'restore' });
      statuses.push(res.status);
      if (res.status === 429) codes.add(res.body.error.code);
    };
    const sendAtOnce = (n: number) => Promise.all(Array.from({ length: n }, send));

    await sendAtOnce(10);
    await withRedis((client) => client.save()); // the snapshot holds the counter at 10
    await sendAtOnce(15);
    await crashAndRestore(); // the counter is 10 again; 25 were accepted

    await sendAtOnce(60);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 200)).toHaveLength(QUOTA);
    expect(statuses.slice(0, 25)).toEqual(Array(25).fill(200));
    expect([...codes]).toEqual(['QUOTA_EXCEEDED']);
    const rows: { emails: string }[] = await t.app
      .get(DataSource)
      .query(`SELECT sum(emails) AS emails FROM account_usage_hourly WHERE account_id = $1`, [tenant.accountId]);
    expect(rows[0].emails).toBe(String(QUOTA));
  });

  it('looks up a key made after the snapshot from an address out of its authentication budget, then fills the filter again', async () => {
    const known = `${t.env.REDIS_KEY_PREFIX}api-keys:known`;
    const unknownKey = () => bearer(`svc_sk_usage_${randomBytes(32).toString('hex')}`);
    const spendBudget = async (ip: string) => {
      for (let i = 0; i < 30; i++) await t.http.get('/auth/whoami').set(unknownKey()).set('X-Forwarded-For', ip).expect(401);
    };
    await waitUntil('the known-keys filter filled', () => withRedis(async (client) => (await client.getbit(known, 0)) === 1));
    await withRedis((client) => client.save());
    const made = await createKey(t, tenant.adminKey, { keyType: 'usage' }); // in the filter, not in the snapshot
    await crashAndRestore();

    await spendBudget('203.0.113.7');
    const res = await t.http.get('/auth/whoami').set(bearer(made.key)).set('X-Forwarded-For', '203.0.113.7');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ keyId: made.keyId });

    // Filled again on this run (a check from a spent address starts the fill), with the new key: it refuses
    // unknown keys without a lookup again.
    const filledOnThisRun = () =>
      withRedis(async (client) => {
        await t.http.get('/auth/whoami').set(unknownKey()).set('X-Forwarded-For', '203.0.113.7');
        const run = /run_id:(\w+)/.exec(await client.info('server'))![1];
        return (await client.getbit(known, 0)) === 1 && (await client.get(`${known}:run`)) === run;
      });
    await waitUntil('the known-keys filter filled again', filledOnThisRun);
    const bits = await withRedis((client) => Promise.all(filterBits(hashKey(made.key)).map((bit) => client.getbit(known, bit))));
    expect(bits).toEqual(Array(bits.length).fill(1));
    await spendBudget('203.0.113.8');
    const refused = await t.http.get('/auth/whoami').set(unknownKey()).set('X-Forwarded-For', '203.0.113.8');
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('IP_RATE_LIMIT');
  });
});
