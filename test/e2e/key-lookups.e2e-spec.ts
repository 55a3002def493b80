import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { RedisService } from '../../src/redis/redis.service';
import { bearer, createAccount, createKey } from '../support/factories';
import { PgProxy } from '../support/pg-proxy';
import { createTestApp, TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-env';

/** The statement that looks a key up by its hash (ApiKeyCache). */
const KEY_LOOKUP = 'k.key_hash = $1';

/**
 * What a presented key costs and how long a deleted one lives (issue 9, D-8), against the real database
 * and Redis. Instance `a` reaches PostgreSQL through a relay, so the tests count the key lookups that
 * really reach the database and can hold one back; instance `t` shares its database and Redis.
 */
describe('key lookups: malformed and unknown keys, the failure budget, deleted keys', () => {
  let t: TestApp;
  let a: TestApp;
  let relay: PgProxy;
  let lookups: () => number;
  let adminKey: string;
  let redis: Redis;

  beforeAll(async () => {
    // TRUST_PROXY: each test is its own client address (X-Forwarded-For), with budgets of its own.
    t = await createTestApp({ env: { RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'loopback' } });
    relay = await PgProxy.start();
    a = await createTestApp({ shareWith: t, env: { DATABASE_URL: relay.url(new URL(t.env.DATABASE_URL).pathname.slice(1)) } });
    lookups = relay.count(KEY_LOOKUP);
    const account = await createAccount(t);
    adminKey = account.adminKey;
    // Unlimited plan: the tests below poll with the account's keys and must see 401, never the plan's 429.
    await t.app.get(DataSource).query(`UPDATE accounts SET tier = 'enterprise' WHERE id = $1`, [account.accountId]);
    redis = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    redis?.disconnect();
    await a?.close();
    await relay?.close();
    await t?.close();
  });

  const hex64 = () => randomBytes(32).toString('hex');
  const unknownKey = () => `svc_sk_usage_${hex64()}`;
  const from = (ip: string) => ({ 'X-Forwarded-For': ip });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  describe('what a bad credential costs', () => {
    it('refuses malformed keys by their shape, without a database lookup', async () => {
      const before = lookups();
      const malformed = [
        'nonsense',
        `svc_sk_admin_${hex64().slice(1)}`,
        `svc_sk_root_${hex64()}`,
        `acme_sk_admin_${hex64()}`,
        `svc_sk_admin_${hex64().toUpperCase()}`,
        `svc_pk_1234_${hex64()}`,
        `svc_sk_usage_${hex64()}0`,
      ];
      for (const secret of malformed) {
        for (const header of [bearer(secret), { 'X-Api-Key': secret }, { 'X-Public-Token': secret }]) {
          const res = await a.http.get('/api-keys').set(header).set(from('203.0.113.1'));
          expect(res.status).toBe(401);
          expect(res.body.error.code).toBe('AUTH_INVALID_KEY');
        }
      }
      expect(lookups() - before).toBe(0);
      // A well-formed one is looked up (the relay sees lookups).
      await a.http.get('/api-keys').set(bearer(unknownKey())).set(from('203.0.113.1')).expect(401);
      expect(lookups() - before).toBe(1);
    });

    it('gives each client IP 30 failed authentications a minute, then 429 IP_RATE_LIMIT without a lookup', async () => {
      const ip = '203.0.113.2';
      const before = lookups();
      for (let used = 1; used <= 30; used++) {
        const res = await a.http.get('/auth/whoami').set(bearer(unknownKey())).set(from(ip)).expect(401);
        expect(res.headers['x-ratelimit-limit']).toBe('30');
        expect(res.headers['x-ratelimit-remaining']).toBe(String(30 - used));
        expect(res.headers['x-ratelimit-scope']).toBe('ip');
      }
      const refused = await a.http.get('/auth/whoami').set(bearer(unknownKey())).set(from(ip));
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatchObject({
        code: 'IP_RATE_LIMIT',
        details: { scope: 'ip', window: 'minute', limit: 30, remaining: 0 },
      });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(lookups() - before).toBe(30);
      // Both instances count into the one budget; malformed keys count too.
      expect((await t.http.get('/auth/whoami').set(bearer('nonsense')).set(from(ip))).status).toBe(429);
      // Calls without a credential are not failures: the address's ordinary limit still lets them through.
      expect((await a.http.get('/auth/whoami').set(from(ip))).body.error.code).toBe('AUTH_MISSING');
    });

    it('counts Bull Board’s wrong passwords in the same budget, and lets the operator in', async () => {
      const ip = '203.0.113.3';
      const basic = (password: string) => ({ Authorization: `Basic ${Buffer.from(`ops:${password}`).toString('base64')}` });
      const before = lookups();
      for (let i = 0; i < 30; i++) {
        const password = i % 2 ? `svc_sk_admin_${hex64()}` : `guess-${i}`;
        const res = await a.http.get('/admin/queues').set(basic(password)).set(from(ip));
        expect(res.status).toBe(401);
        expect(res.headers['x-ratelimit-remaining']).toBe(String(29 - i));
      }
      expect(lookups() - before).toBe(15);
      const refused = await a.http
        .get('/admin/queues')
        .set(basic(`svc_sk_admin_${hex64()}`))
        .set(from(ip));
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error: { code: 'IP_RATE_LIMIT' }, documentation: 'http://mailroom.test/docs#errors' });
      expect(lookups() - before).toBe(15);
      await a.http.get('/admin/queues').set(basic(t.operatorKey)).set(from('203.0.113.33')).expect(200);
    });

    it('lets a valid key never used before through from an address whose budget is used up; unknown keys stay refused there, unlooked-up', async () => {
      // Other clients behind one address (a NAT, a CI runner) sent bad keys until the budget was gone.
      const ip = '203.0.113.5';
      for (let i = 0; i < 30; i++) await a.http.get('/auth/whoami').set(bearer(unknownKey())).set(from(ip)).expect(401);
      expect((await a.http.get('/auth/whoami').set(bearer(unknownKey())).set(from(ip))).status).toBe(429);

      // Keys made afterwards on the other instance, never used by anyone.
      const usage = await createKey(t, adminKey, { keyType: 'usage' });
      const operatorAdmin = await createKey(t, t.operatorKey, { keyType: 'admin' });
      const before = lookups();
      const first = await a.http.get('/auth/whoami').set(bearer(usage.key)).set(from(ip));
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ keyId: usage.keyId, keyType: 'usage' });
      expect(first.headers['x-ratelimit-scope']).not.toBe('ip');
      const basic = { Authorization: `Basic ${Buffer.from(`ops:${operatorAdmin.key}`).toString('base64')}` };
      expect((await a.http.get('/admin/queues').set(basic).set(from(ip))).status).toBe(200);
      expect(lookups() - before).toBe(2);

      // Unknown keys from that address: still 429, and no lookup.
      for (const header of [bearer(unknownKey()), { 'X-Api-Key': unknownKey() }, bearer('nonsense')]) {
        const refused = await a.http.get('/auth/whoami').set(header).set(from(ip));
        expect(refused.status).toBe(429);
        expect(refused.body.error.code).toBe('IP_RATE_LIMIT');
      }
      expect(lookups() - before).toBe(2);

      // The key keeps working there once its cache entry is gone, on both instances.
      await sleep(900);
      expect((await a.http.get('/auth/whoami').set(bearer(usage.key)).set(from(ip))).status).toBe(200);
      expect((await t.http.get('/auth/whoami').set(bearer(usage.key)).set(from(ip))).status).toBe(200);
    });

    it('looks keys up from a spent address while Redis has lost what tells keys from non-keys, until it is rebuilt', async () => {
      const unused = await createKey(t, adminKey, { keyType: 'usage' });
      const known = `${t.env.REDIS_KEY_PREFIX}api-keys:known`;
      await redis.del(known); // as a Redis restart without persistence would
      const ip = '203.0.113.6';
      for (let i = 0; i < 30; i++) await a.http.get('/auth/whoami').set(bearer(unknownKey())).set(from(ip)).expect(401);
      expect((await a.http.get('/auth/whoami').set(bearer(unknownKey())).set(from(ip))).status).toBe(429);
      expect((await a.http.get('/auth/whoami').set(bearer(unused.key)).set(from(ip))).status).toBe(200);

      const deadline = Date.now() + 5000;
      while ((await redis.getbit(known, 0)) !== 1 && Date.now() < deadline) await sleep(50);
      expect(await redis.getbit(known, 0)).toBe(1);
      const before = lookups();
      expect((await a.http.get('/auth/whoami').set(bearer(unknownKey())).set(from(ip))).status).toBe(429);
      expect(lookups() - before).toBe(0);
    });

    it('looks an unknown key up once for concurrent and repeated requests (misses are cached)', async () => {
      const secret = unknownKey();
      const before = lookups();
      const statuses = await Promise.all(
        Array.from({ length: 10 }, () =>
          a.http
            .get('/auth/whoami')
            .set(bearer(secret))
            .set(from('203.0.113.4'))
            .then((r) => r.status),
        ),
      );
      for (let i = 0; i < 5; i++) statuses.push((await a.http.get('/auth/whoami').set(bearer(secret)).set(from('203.0.113.4'))).status);
      expect(statuses).toEqual(Array(15).fill(401));
      expect(lookups() - before).toBe(1);
    });
  });

  describe('a deleted key stops within a second on every instance (D-8)', () => {
    /** Asks instance `app` with the key until it is refused; the status at `deadline`. */
    async function statusBy(app: TestApp, key: string, deadline: number, ip: string): Promise<number> {
      let status = 0;
      while (Date.now() < deadline) {
        status = (await app.http.get('/auth/whoami').set(bearer(key)).set(from(ip))).status;
        if (status === 401) break;
        await sleep(25);
      }
      return status;
    }

    it('even when the key’s lookup was under way while it was deleted', async () => {
      const { key, keyId } = await createKey(t, adminKey, { keyType: 'usage' });
      // Instance a looks the key up; PostgreSQL answers (with the key: the delete has not happened) but the
      // answer is held on its way back.
      const answered = relay.holdAnswer(KEY_LOOKUP, keyId);
      const first = a.http
        .get('/auth/whoami')
        .set(bearer(key))
        .set(from('198.51.100.1'))
        .then((res) => res.status);
      await answered;
      await t.http.delete(`/api-keys/${keyId}`).set(bearer(adminKey)).expect(200);
      const deadline = Date.now() + 1000;
      await sleep(100); // the invalidation has reached instance a by now: it had nothing to drop yet
      relay.release();
      expect([200, 401]).toContain(await first); // that request raced the delete
      expect(await statusBy(a, key, deadline, '198.51.100.1')).toBe(401);
    });

    it('even when this instance missed the invalidation (its subscriber was reconnecting)', async () => {
      const { key, keyId } = await createKey(t, adminKey, { keyType: 'usage' });
      await a.http.get('/auth/whoami').set(bearer(key)).set(from('198.51.100.2')).expect(200); // cached on a
      // Cut instance a's subscriber connection (found by its own socket, killed by its client id only).
      const subscriber = a.app.get<RedisService, { subscriber: Redis }>(RedisService).subscriber;
      const port = subscriber.stream.localPort;
      const clients = (await redis.client('LIST')) as string;
      const line = clients.split('\n').find((l) => l.includes(' name=mailroom:subscriber ') && l.includes(`addr=127.0.0.1:${port} `));
      const id = /^id=(\d+) /.exec(line ?? '')?.[1];
      expect(id).toBeDefined();
      await redis.client('KILL', 'ID', id!);
      await t.http.delete(`/api-keys/${keyId}`).set(bearer(adminKey)).expect(200);
      const deadline = Date.now() + 1000;
      expect(subscriber.status).not.toBe('ready'); // the delete was announced while a could not hear it
      expect(await statusBy(a, key, deadline, '198.51.100.2')).toBe(401);
    });
  });
});
