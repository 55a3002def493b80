import { Logger } from '@nestjs/common';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { ApiKeysService, NewKeyInput } from '../../src/api-keys/api-keys.service';
import { RateLimitClock } from '../../src/rate-limits/rate-limit.clock';
import { RateLimitStorage } from '../../src/rate-limits/rate-limit.storage';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * The limiter against real Redis: every scope trips at exactly its limit, the headers are on every
 * response, two instances enforce one limit together, and a parallel burst never gets more than the limit.
 */
describe('rate limiting', () => {
  let t: TestApp;
  /** A second instance on the same database and Redis, which believes X-Forwarded-For from loopback. */
  let t2: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_ENABLED: 'true' } });
    t2 = await createTestApp({ shareWith: t, env: { TRUST_PROXY: 'loopback' } });
  });
  afterAll(async () => {
    await t2?.close();
    await t?.close();
  });

  /** Moves both instances' limiter clocks forward together (windows are an hour; tests do not wait). */
  const advance = (ms: number) => [t, t2].forEach((app) => app.app.get(RateLimitClock).advance(ms));
  /** A fresh start for every counter: the longest window is an hour, fully slid past after two. */
  const freshWindows = () => advance(2 * 3_600_000 + 1000);

  /** A key made by the service, so that making it costs the account no request. */
  async function keyFor(accountId: string, input: Partial<NewKeyInput> = {}): Promise<string> {
    const { secret } = await t.app.get(ApiKeysService).create(accountId, { name: 'k', keyType: 'usage', ...input });
    return secret;
  }
  async function accountWithKey(input: Partial<NewKeyInput> = {}, settings?: object) {
    const { accountId, adminKey } = await createAccount(t);
    if (settings) await t.app.get(DataSource).query('UPDATE accounts SET settings = $2 WHERE id = $1', [accountId, settings]);
    return { accountId, adminKey, key: await keyFor(accountId, input) };
  }
  const whoami = (key: string, app = t) => app.http.get('/auth/whoami').set(bearer(key));
  const limitHeaders = (res: Response) => ({
    limit: Number(res.headers['x-ratelimit-limit']),
    remaining: Number(res.headers['x-ratelimit-remaining']),
    scope: res.headers['x-ratelimit-scope'],
  });

  function expectRefused(res: Response, code: string, scope: string, limit: number) {
    expect(res.status).toBe(429);
    expect(res.body).toEqual({
      error: {
        code,
        message: expect.stringContaining('Rate limit exceeded'),
        details: {
          limit,
          remaining: 0,
          reset_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          retry_after: expect.any(Number),
          scope,
          window: expect.any(String),
        },
      },
      documentation: 'http://mailroom.test/docs#errors',
    });
    const retryAfter = res.body.error.details.retry_after;
    expect(retryAfter).toBeGreaterThan(0);
    expect(res.headers['retry-after']).toBe(String(retryAfter));
    expect(res.headers['x-ratelimit-retryafter']).toBe(String(retryAfter));
    expect(limitHeaders(res)).toEqual({ limit, remaining: 0, scope });
    expect(Number(res.headers['x-ratelimit-reset'])).toBe(Math.ceil(Date.parse(res.body.error.details.reset_time) / 1000));
  }

  describe('api-key scope', () => {
    beforeEach(freshWindows);

    it('counts down the key’s per-minute burst_limit and refuses the next with API_KEY_RATE_LIMIT', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 3 } });
      for (const remaining of [2, 1, 0]) {
        const res = await whoami(key).expect(200);
        expect(limitHeaders(res)).toEqual({ limit: 3, remaining, scope: 'api-key' });
      }
      const refused = await whoami(key);
      expectRefused(refused, 'API_KEY_RATE_LIMIT', 'api-key', 3);
      expect(refused.body.error.details.window).toBe('minute');
    });

    it('enforces the key’s hourly rateLimit', async () => {
      const { key } = await accountWithKey({ rateLimit: 2 });
      await whoami(key).expect(200);
      await whoami(key).expect(200);
      const refused = await whoami(key);
      expectRefused(refused, 'API_KEY_RATE_LIMIT', 'api-key', 2);
      expect(refused.body.error.details.window).toBe('hour');
    });

    it('is whole again once the window has slid past (X-RateLimit-Reset)', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 2 } });
      await whoami(key).expect(200);
      const last = await whoami(key).expect(200);
      await whoami(key).expect(429);
      const resetAt = Number(last.headers['x-ratelimit-reset']) * 1000;
      advance(resetAt - t.app.get(RateLimitClock).now() + 1000);
      const res = await whoami(key).expect(200);
      expect(limitHeaders(res)).toEqual({ limit: 2, remaining: 1, scope: 'api-key' });
    });

    it('scales the key’s limits by restrictions.multiplier', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 2, multiplier: 2 } });
      for (let i = 0; i < 4; i++) await whoami(key).expect(200);
      expectRefused(await whoami(key), 'API_KEY_RATE_LIMIT', 'api-key', 4);
    });

    it('skips the key’s own limits when restrictions.exempt, but not the plan’s', async () => {
      const { key } = await accountWithKey({ rateLimit: 1, restrictions: { exempt: true } }, { limits: { requests_per_minute: 3 } });
      for (const remaining of [2, 1, 0]) {
        expect(limitHeaders(await whoami(key).expect(200))).toEqual({ limit: 3, remaining, scope: 'account' });
      }
      expectRefused(await whoami(key), 'RATE_LIMIT_EXCEEDED', 'account', 3);
    });

    it('accepts exempt and multiplier when a key is created through the API and shows them back', async () => {
      // Only an exempt key may make an exempt one (a key never creates a wider key).
      const { accountId } = await createAccount(t);
      const adminKey = await keyFor(accountId, { keyType: 'admin', restrictions: { exempt: true } });
      const res = await t.http
        .post('/api-keys')
        .set(bearer(adminKey))
        .send({ name: 'x', keyType: 'usage', restrictions: { exempt: true, multiplier: 1.5 } })
        .expect(201);
      expect(res.body.apiKey.restrictions).toEqual({ exempt: true, multiplier: 1.5 });
      const bad = await t.http
        .post('/api-keys')
        .set(bearer(adminKey))
        .send({ name: 'x', keyType: 'usage', restrictions: { exempt: 'yes', multiplier: 1000 } })
        .expect(400);
      expect(bad.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual([
        'restrictions.exempt',
        'restrictions.multiplier',
      ]);
    });
  });

  describe('account scope (plan, variant B)', () => {
    beforeEach(freshWindows);

    it('holds a free account to 50 requests a minute across all its keys', async () => {
      const { accountId, key } = await accountWithKey();
      const other = await keyFor(accountId);
      for (let i = 0; i < 25; i++) await whoami(key).expect(200);
      for (let i = 0; i < 24; i++) await whoami(other).expect(200);
      expect(limitHeaders(await whoami(other).expect(200))).toEqual({ limit: 50, remaining: 0, scope: 'account' });
      expectRefused(await whoami(key), 'RATE_LIMIT_EXCEEDED', 'account', 50);
    });

    it('takes enterprise limits from settings.limits, including the burst bucket', async () => {
      const { accountId, adminKey } = await createAccount(t);
      await t.app
        .get(DataSource)
        .query(`UPDATE accounts SET tier = 'enterprise', settings = $2 WHERE id = $1`, [
          accountId,
          { limits: { requests_per_minute: 6, burst: 3 } },
        ]);
      const key = await keyFor(accountId);
      const status = await t.http.get('/rate-limits/status').set(bearer(adminKey)).expect(200);
      expect(status.body).toMatchObject({ plan: 'enterprise', plan_limits: { requests_per_minute: 6, burst: 3 } });
      for (let i = 0; i < 3; i++) await whoami(key).expect(200);
      const refused = await whoami(key);
      expectRefused(refused, 'RATE_LIMIT_EXCEEDED', 'account', 3);
      expect(refused.body.error.details.window).toBe('burst');
    });
  });

  describe('endpoint scope', () => {
    beforeEach(freshWindows);

    it('holds /admin/* to 5 a minute (D-11) with ENDPOINT_RATE_LIMIT', async () => {
      for (const remaining of [4, 3, 2, 1, 0]) {
        const res = await t.http.get('/admin/accounts').set(bearer(t.operatorKey)).expect(200);
        expect(limitHeaders(res)).toEqual({ limit: 5, remaining, scope: 'endpoint' });
      }
      expectRefused(await t.http.get('/admin/accounts').set(bearer(t.operatorKey)), 'ENDPOINT_RATE_LIMIT', 'endpoint', 5);
      // Other routes of the same key are not held by that endpoint's counter (nor by any other: the operator's
      // key has no hourly limit of its own and its enterprise account none, so no headers either).
      expect((await whoami(t.operatorKey).expect(200)).headers['x-ratelimit-scope']).toBeUndefined();
    });
  });

  describe('ip scope and headers on every response', () => {
    beforeEach(freshWindows);

    it('limits calls without a valid credential by client IP: 60 a minute, then IP_RATE_LIMIT', async () => {
      const first = await t.http.get('/auth/whoami').expect(401);
      expect(limitHeaders(first)).toEqual({ limit: 60, remaining: 59, scope: 'ip' });
      // An unknown key and an unknown path count against the same address, and carry the headers too; the
      // unknown key also spends one of the address's 30 failed authentications, the tighter limit then.
      expect(limitHeaders(await whoami('svc_sk_usage_' + '0'.repeat(64)).expect(401))).toEqual({ limit: 30, remaining: 29, scope: 'ip' });
      expect(limitHeaders(await t.http.get('/no/such/route').expect(404))).toMatchObject({ remaining: 57, scope: 'ip' });
      // X-Forwarded-For is not believed without TRUST_PROXY.
      for (let i = 0; i < 57; i++) await t.http.get('/auth/whoami').set('X-Forwarded-For', `198.51.100.${i}`).expect(401);
      expectRefused(await t.http.get('/auth/whoami'), 'IP_RATE_LIMIT', 'ip', 60);
      // Health, docs and tracking are never limited.
      const health = await t.http.get('/health').expect(200);
      expect(health.headers['x-ratelimit-limit']).toBeUndefined();
      // A client behind a proxy named in TRUST_PROXY is counted by its X-Forwarded-For address.
      const proxied = await t2.http.get('/auth/whoami').set('X-Forwarded-For', '203.0.113.50').expect(401);
      expect(limitHeaders(proxied)).toEqual({ limit: 60, remaining: 59, scope: 'ip' });
    });

    it('puts the key’s headers on 403 and 404 answers', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 10 } });
      expect(limitHeaders(await t.http.get('/api-keys').set(bearer(key)).expect(403))).toEqual({
        limit: 10,
        remaining: 9,
        scope: 'api-key',
      });
      expect(limitHeaders(await t.http.get('/nothing-here').set(bearer(key)).expect(404))).toEqual({
        limit: 10,
        remaining: 8,
        scope: 'api-key',
      });
    });

    it('counts and labels a malformed body too, and refuses a limited caller before reading its body', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 2 } });
      const malformed = await t.http
        .post('/api-keys')
        .set(bearer(key))
        .set('Content-Type', 'application/json')
        .send('{"name": ')
        .expect(400);
      expect(malformed.body.error.code).toBe('MALFORMED_JSON');
      expect(malformed.headers['x-request-id']).toBeDefined();
      expect(limitHeaders(malformed)).toEqual({ limit: 2, remaining: 1, scope: 'api-key' });
      await whoami(key).expect(200);
      const refused = await t.http.post('/api-keys').set(bearer(key)).set('Content-Type', 'application/json').send('{"name": ');
      expectRefused(refused, 'API_KEY_RATE_LIMIT', 'api-key', 2);
    });
  });

  describe('GET /rate-limits and /rate-limits/status', () => {
    beforeEach(freshWindows);

    it('reports the calling key’s hourly and per-minute limits without counting', async () => {
      const { key } = await accountWithKey({ rateLimit: 40, restrictions: { burst_limit: 8 } });
      await whoami(key).expect(200);
      for (let i = 0; i < 2; i++) {
        const res = await t.http.get('/rate-limits').set(bearer(key)).expect(200);
        expect(res.body).toEqual({
          rate_limits: {
            requests_per_hour: { limit: 40, remaining: 39, reset_time: expect.any(String) },
            requests_per_minute: { limit: 8, remaining: 7, reset_time: expect.any(String) },
          },
        });
        expect(limitHeaders(res)).toEqual({ limit: 8, remaining: 7, scope: 'api-key' });
      }
    });

    it('answers a public token too', async () => {
      const { accountId } = await createAccount(t);
      const token = await keyFor(accountId, { keyType: 'public', domainScope: 'shop.example.com' });
      const res = await t.http.get('/rate-limits').set('X-Public-Token', token).expect(200);
      expect(res.body.rate_limits.requests_per_hour).toMatchObject({ limit: 100, remaining: 100 });
    });

    it('lists every scope that applies, with the plan', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 8, multiplier: 2 } });
      await whoami(key).expect(200);
      const res = await t.http.get('/rate-limits/status').set(bearer(key)).expect(200);
      expect(res.body).toMatchObject({
        plan: 'free',
        plan_limits: { requests_per_hour: 1000, requests_per_minute: 50, burst: 100 },
        exempt: false,
        multiplier: 2,
      });
      expect(res.body.scopes.map((s: any) => [s.scope, s.window, s.limit, s.remaining])).toEqual([
        ['api-key', 'hour', 2000, 1999],
        ['api-key', 'minute', 16, 15],
        ['account', 'hour', 1000, 999],
        ['account', 'minute', 50, 49],
        ['account', 'burst', 100, 99],
      ]);
      expect(res.body.endpoints).toContainEqual({
        scope: 'endpoint',
        window: 'minute',
        endpoint: '/admin/*',
        limit: 5,
        remaining: 5,
        reset_time: expect.any(String),
      });
    });
  });

  describe('shared state', () => {
    beforeEach(freshWindows);

    it('enforces one limit across two instances sharing Redis', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 4 } });
      await whoami(key, t).expect(200);
      await whoami(key, t2).expect(200);
      await whoami(key, t).expect(200);
      expect(limitHeaders(await whoami(key, t2).expect(200))).toMatchObject({ remaining: 0 });
      expectRefused(await whoami(key, t), 'API_KEY_RATE_LIMIT', 'api-key', 4);
      expectRefused(await whoami(key, t2), 'API_KEY_RATE_LIMIT', 'api-key', 4);
    });

    it('lets no more than the limit through a parallel burst of three times the limit on both instances', async () => {
      const limit = 10;
      const { key } = await accountWithKey({ restrictions: { burst_limit: limit } });
      const statuses = await Promise.all(
        Array.from({ length: 3 * limit }, (_, i) => whoami(key, i % 2 ? t : t2).then((res) => res.status)),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(limit);
      expect(statuses.filter((s) => s === 429)).toHaveLength(2 * limit);
    });
  });

  describe('when Redis is unreachable', () => {
    beforeEach(freshWindows);
    afterEach(() => jest.restoreAllMocks());

    it('keeps answering, holding each caller to half of every limit in memory, and Redis rules again once back', async () => {
      const { key } = await accountWithKey({ restrictions: { burst_limit: 8 } });
      expect(limitHeaders(await whoami(key).expect(200))).toEqual({ limit: 8, remaining: 7, scope: 'api-key' });
      const errors = jest.spyOn(Logger.prototype, 'error');
      const logs = jest.spyOn(Logger.prototype, 'log');
      const connection = t.app.get(RateLimitStorage).connection;
      connection.disconnect();
      try {
        // RATE_LIMIT_FALLBACK_SHARE (0.5): 4 of the key's 8 a minute, counted from zero in this process.
        for (const remaining of [3, 2, 1, 0]) {
          expect(limitHeaders(await whoami(key).expect(200))).toEqual({ limit: 4, remaining, scope: 'api-key' });
        }
        expectRefused(await whoami(key), 'API_KEY_RATE_LIMIT', 'api-key', 4);
        // Calls without a credential too: 30 of the address's 60 a minute.
        expect(limitHeaders(await t.http.get('/auth/whoami').expect(401))).toEqual({ limit: 30, remaining: 29, scope: 'ip' });
        // The other instance still reaches Redis and counts there.
        expect(limitHeaders(await whoami(key, t2).expect(200))).toEqual({ limit: 8, remaining: 6, scope: 'api-key' });
      } finally {
        await connection.connect();
      }
      // Back on Redis: its counters rule again (2 of 8 were counted there).
      expect(limitHeaders(await whoami(key).expect(200))).toEqual({ limit: 8, remaining: 5, scope: 'api-key' });
      const about = (spy: jest.SpyInstance, text: RegExp) => spy.mock.calls.filter(([message]) => text.test(String(message)));
      expect(about(errors, /Rate limiter cannot reach Redis/)).toHaveLength(1);
      expect(about(logs, /Rate limiter reaches Redis again/)).toHaveLength(1);
    });
  });
});
