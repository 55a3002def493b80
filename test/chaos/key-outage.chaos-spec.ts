import type { Response } from 'supertest';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { PrivatePostgres, PrivateRedis, startPrivatePostgres, startPrivateRedis, waitUntil } from './support/private-servers';

const TEST_TIMEOUT_MS = 120_000;
/** Longer than the account limits' own cache (30 s): what the limiter needs of the account must last too. */
const PAST_ACCOUNT_LIMITS_TTL_MS = 31_000;

// Keys through a PostgreSQL outage, on servers of this test's own: a key in use keeps working from its last
// copy (for a bounded time), a key this instance cannot look up answers 503 with Retry-After (never an IP
// limit, never 401), and a key deleted before the outage is not revived.
describe('API keys while PostgreSQL is down', () => {
  let postgres: PrivatePostgres;
  let redis: PrivateRedis;
  let t: TestApp;
  let keys: Record<'recent' | 'neverSeen' | 'deleted', { key: string; keyId: string }>;

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis()]);
    // TRUST_PROXY: each call below comes from an address of its own (X-Forwarded-For).
    t = await createTestApp({
      stores: { databaseUrl: postgres.url('mailroom'), redisUrl: redis.url },
      env: { RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'loopback', APP_ROLE: 'api' },
    });
    const { accountId, adminKey } = await createAccount(t, 'Keys outage');
    await t.app.get(DataSource).query(`UPDATE accounts SET tier = 'enterprise' WHERE id = $1`, [accountId]);
    keys = {
      recent: await createKey(t, adminKey, { keyType: 'usage' }),
      neverSeen: await createKey(t, adminKey, { keyType: 'usage' }),
      deleted: await createKey(t, adminKey, { keyType: 'usage' }),
    };
    await whoami(keys.recent.key).expect(200);
    await t.http.get('/rate-limits/status').set(bearer(keys.recent.key)).expect(200);
    await whoami(keys.deleted.key).expect(200);
    await t.http.delete(`/api-keys/${keys.deleted.keyId}`).set(bearer(adminKey)).expect(200);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await Promise.all([postgres?.close(), redis?.close()]);
  });

  const whoami = (key: string, ip = '198.51.100.10') => t.http.get('/auth/whoami').set(bearer(key)).set('X-Forwarded-For', ip);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  function expectUnavailable(res: Response): void {
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: { code: 'SERVICE_UNAVAILABLE', message: expect.any(String) },
      documentation: 'http://mailroom.test/docs#errors',
    });
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  }

  it(
    'keeps a key in use working, answers 503 for the keys it cannot look up, and is itself again once PostgreSQL is back',
    async () => {
      await postgres.stop();
      await sleep(1000); // past every found key's 800 ms in memory: what follows comes from failed lookups

      const recent = await whoami(keys.recent.key);
      expect(recent.status).toBe(200);
      expect(recent.body).toMatchObject({ keyId: keys.recent.keyId });

      // A valid key this instance never saw: many calls from one address, as clients retrying in a restart
      // under load. Every one is 503, none the address's limit (60 a minute) nor a 401.
      const neverSeen = await Promise.all(Array.from({ length: 70 }, () => whoami(keys.neverSeen.key, '198.51.100.20')));
      for (const res of neverSeen) expectUnavailable(res);
      // Whether a secret is a key cannot be known without PostgreSQL: 503 as well.
      expectUnavailable(await whoami(`svc_sk_usage_${randomBytes(32).toString('hex')}`, '198.51.100.21'));
      // Deleted just before the outage: its copy went with the deletion, nothing revives it.
      expectUnavailable(await whoami(keys.deleted.key, '198.51.100.22'));

      // Later in the outage, past the account limits' 30 s too, the key in use still works.
      await sleep(PAST_ACCOUNT_LIMITS_TTL_MS);
      await whoami(keys.recent.key).expect(200);
      const status = await t.http.get('/rate-limits/status').set(bearer(keys.recent.key)).set('X-Forwarded-For', '198.51.100.10');
      expect(status.status).toBe(200);
      expect(status.body.plan).toBe('enterprise');

      await postgres.start();
      await waitUntil('the never-seen key to be looked up', async () => (await whoami(keys.neverSeen.key, '198.51.100.23')).status === 200);
      await whoami(keys.recent.key).expect(200);
      expect((await whoami(keys.deleted.key, '198.51.100.24')).body.error.code).toBe('AUTH_INVALID_KEY');
    },
    TEST_TIMEOUT_MS,
  );
});
