import { randomBytes } from 'node:crypto';
import { HungRedis, startHungRedis } from '../../test/support/hung-redis';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { InProcessCounters } from './rate-limit.memory';
import { RateLimitStorage } from './rate-limit.storage';
import { LimitRule, MINUTE_MS } from './rate-limit.types';

/**
 * The window and bucket arithmetic of the Lua script, run in the real Redis (127.0.0.1:6379 or
 * TEST_REDIS_URL) with a clock the test sets, so every instant is exact.
 */
describe('RateLimitStorage (the Lua script)', () => {
  const prefix = `mailroom-unit:${randomBytes(4).toString('hex')}:`;
  const config = AppConfigService.fromEnv({
    NODE_ENV: 'test',
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: prefix,
  });
  const redis = new RedisService(config);
  const storage = new RateLimitStorage(redis, config);
  let n = 0;
  const T = 1_800_000_000_000;

  const windowRule = (limit: number, windowMs = MINUTE_MS): LimitRule => ({
    scope: 'api-key',
    window: 'minute',
    kind: 'window',
    key: redis.key('w', String(++n)),
    limit,
    windowMs,
  });
  const bucketRule = (capacity: number, refillPerMinute: number): LimitRule => ({
    scope: 'account',
    window: 'burst',
    kind: 'bucket',
    key: redis.key('b', String(++n)),
    limit: capacity,
    refillPerMinute,
  });
  const hit = async (rule: LimitRule, at: number, cost = 1) => {
    const { allowed, states } = await storage.consume([rule], cost, at);
    return { allowed, ...states[0] };
  };

  beforeAll(() => storage.onModuleInit());
  afterAll(async () => {
    const keys = await redis.client.keys(`${prefix}*`);
    if (keys.length) await redis.client.del(...keys);
    await storage.onApplicationShutdown();
    await redis.onApplicationShutdown();
  });

  describe('sliding window', () => {
    it('allows exactly the limit, counting remaining down, then refuses', async () => {
      const rule = windowRule(3);
      expect(await hit(rule, T)).toMatchObject({ allowed: true, remaining: 2, retryAfterMs: 0 });
      expect(await hit(rule, T + 1)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await hit(rule, T + 2)).toMatchObject({ allowed: true, remaining: 0 });
      const refused = await hit(rule, T + 3);
      expect(refused).toMatchObject({ allowed: false, remaining: 0 });
      // Next window: the 3 weigh 3 × (1 − e/60 s); one more fits when that is ≤ 2, at e = 20 s.
      expect(refused.retryAfterMs).toBe(MINUTE_MS - 3 + 20_000);
      expect(refused.resetAtMs).toBe(T + 2 * MINUTE_MS);
    });

    it('does not count refused requests', async () => {
      const rule = windowRule(1);
      await hit(rule, T);
      for (let i = 1; i <= 5; i++) expect((await hit(rule, T + i)).allowed).toBe(false);
      expect((await hit(rule, T + MINUTE_MS + MINUTE_MS / 2)).allowed).toBe(false);
      expect((await hit(rule, T + 2 * MINUTE_MS)).allowed).toBe(true);
    });

    it('never lets twice the limit through at a window edge', async () => {
      const rule = windowRule(10);
      await hit(rule, T);
      for (let i = 0; i < 9; i++) expect((await hit(rule, T + 59_000)).allowed).toBe(true);
      // A fixed window would start again from zero here and take 10 more.
      expect((await hit(rule, T + MINUTE_MS + 1)).allowed).toBe(false);
      // Halfway through the next window half of the previous ten still weigh.
      const halfway = T + MINUTE_MS + MINUTE_MS / 2;
      let allowed = 0;
      for (let i = 0; i < 10; i++) if ((await hit(rule, halfway)).allowed) allowed++;
      expect(allowed).toBe(5);
    });

    it('reports the wait inside the window when the previous window’s weight is what refuses', async () => {
      const rule = windowRule(4);
      for (let i = 0; i < 4; i++) await hit(rule, T);
      // Window 1 at e = 0: used = 4 × 1 = 4; one more fits once 4 × (1 − e/60 s) ≤ 3, at e = 15 s.
      const refused = await hit(rule, T + MINUTE_MS);
      expect(refused).toMatchObject({ allowed: false, retryAfterMs: 15_000 });
      expect((await hit(rule, T + MINUTE_MS + 14_999)).allowed).toBe(false);
      expect((await hit(rule, T + MINUTE_MS + 15_000)).allowed).toBe(true);
    });

    it('is whole again at the reset time', async () => {
      const rule = windowRule(5);
      const last = await (async () => {
        let state = await hit(rule, T);
        for (let i = 0; i < 4; i++) state = await hit(rule, T + 10_000);
        return state;
      })();
      expect(last.remaining).toBe(0);
      expect(await hit(rule, last.resetAtMs, 0)).toMatchObject({ allowed: true, remaining: 5 });
    });

    it('reads without counting when the cost is 0', async () => {
      const rule = windowRule(2);
      await hit(rule, T);
      expect(await hit(rule, T + 1, 0)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await hit(rule, T + 2, 0)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await hit(rule, T + 3)).toMatchObject({ allowed: true, remaining: 0 });
    });
  });

  describe('token bucket', () => {
    it('takes a burst of its capacity, then refills at its rate', async () => {
      const rule = bucketRule(5, 60); // one token a second
      for (let left = 4; left >= 0; left--) expect(await hit(rule, T)).toMatchObject({ allowed: true, remaining: left });
      const refused = await hit(rule, T);
      expect(refused).toMatchObject({ allowed: false, retryAfterMs: 1000, resetAtMs: T + 5000 });
      expect((await hit(rule, T + 999)).allowed).toBe(false);
      expect(await hit(rule, T + 1000)).toMatchObject({ allowed: true, remaining: 0 });
      expect(await hit(rule, T + 3500, 0)).toMatchObject({ remaining: 2 });
    });

    it('never holds more than its capacity', async () => {
      const rule = bucketRule(3, 60);
      await hit(rule, T);
      expect(await hit(rule, T + 3_600_000, 0)).toMatchObject({ remaining: 3 });
    });
  });

  describe('several rules in one call', () => {
    it('moves no counter when any rule refuses', async () => {
      const loose = windowRule(10);
      const tight = windowRule(1);
      expect((await storage.consume([loose, tight], 1, T)).allowed).toBe(true);
      const refused = await storage.consume([loose, tight], 1, T + 1);
      expect(refused.allowed).toBe(false);
      expect(refused.states.map((s) => s.retryAfterMs > 0)).toEqual([false, true]);
      expect(await hit(loose, T + 2, 0)).toMatchObject({ remaining: 9 });
    });
  });

  describe('deciding without moving (dry run)', () => {
    it('says whether a request of that cost would pass, and moves nothing', async () => {
      const rule = windowRule(2);
      await hit(rule, T);
      expect((await storage.consume([rule], 1, T + 1, 'never')).allowed).toBe(true);
      expect((await storage.consume([rule], 1, T + 2, 'never')).allowed).toBe(true);
      await hit(rule, T + 3);
      const refused = await storage.consume([rule], 1, T + 4, 'never');
      expect(refused.allowed).toBe(false);
      expect(refused.states[0].retryAfterMs).toBeGreaterThan(0);
    });
  });

  describe('counting what has happened (always)', () => {
    it('moves every counter past its limit too, and later requests see it', async () => {
      const loose = windowRule(10);
      const tight = windowRule(1);
      expect((await storage.consume([loose, tight], 1, T, 'always')).allowed).toBe(true);
      const over = await storage.consume([loose, tight], 1, T + 1, 'always');
      expect(over.allowed).toBe(false);
      expect(over.states.map((s) => s.remaining)).toEqual([8, 0]);
      // The tight counter holds 2 of its 1: one more waits until the window has let both go.
      const refused = await storage.consume([tight], 1, T + 2, 'never');
      expect(refused.allowed).toBe(false);
      expect(refused.states[0].retryAfterMs).toBeGreaterThan(MINUTE_MS);
    });
  });

  describe('the in-process fallback (rate-limit.memory.ts)', () => {
    it('decides every step of a random sequence exactly as the script does', async () => {
      const memory = new InProcessCounters();
      // A fixed-seed generator: the sequence is the same at every run.
      let seed = 42;
      const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
      // Redis expires idle counters on the real clock, memory on the test's: steps stay short enough that
      // no window counter idles for two windows, where the two would differ only in the windows' phase.
      const rules = [windowRule(7), windowRule(3, 20_000), bucketRule(5, 30)];
      let at = T;
      let refusals = 0;
      for (let step = 0; step < 400; step++) {
        at += Math.floor(random() * 1500);
        const picked = rules.filter(() => random() < 0.6);
        if (picked.length === 0) continue;
        const cost = random() < 0.1 ? 0 : 1;
        const draw = random();
        const mode = draw < 0.1 ? 'never' : draw < 0.2 ? 'always' : 'if-allowed';
        const fromRedis = await storage.consume(picked, cost, at, mode);
        expect({ step, ...memory.consume(picked, cost, at, mode) }).toEqual({ step, ...fromRedis });
        refusals += fromRedis.allowed ? 0 : 1;
      }
      expect(refusals).toBeGreaterThan(50);
    });
  });

  describe('as @nestjs/throttler’s storage', () => {
    it('reports hits and blocks in ThrottlerStorageRecord terms', async () => {
      const key = `k${++n}`;
      const first = await storage.increment(key, MINUTE_MS, 2, MINUTE_MS, 'default');
      expect(first).toMatchObject({ totalHits: 1, isBlocked: false });
      await storage.increment(key, MINUTE_MS, 2, MINUTE_MS, 'default');
      const third = await storage.increment(key, MINUTE_MS, 2, MINUTE_MS, 'default');
      expect(third.isBlocked).toBe(true);
      expect(third.timeToBlockExpire).toBeGreaterThan(0);
    });
  });

  describe('when Redis stops answering', () => {
    let silent: HungRedis;
    beforeAll(async () => {
      silent = await startHungRedis();
    });
    afterAll(() => silent.close());

    it('gives up after RATE_LIMIT_REDIS_TIMEOUT_MS instead of waiting', async () => {
      const hungConfig = AppConfigService.fromEnv({
        NODE_ENV: 'test',
        REDIS_URL: silent.url,
        RATE_LIMIT_REDIS_TIMEOUT_MS: '50',
      });
      const hungRedis = new RedisService(hungConfig);
      const hung = new RateLimitStorage(hungRedis, hungConfig);
      await hung.onModuleInit();
      try {
        await expect(hung.consume([windowRule(1)], 1, T)).rejects.toThrow(/timed out/i);
      } finally {
        hung.connection.disconnect();
        hungRedis.client.disconnect();
      }
    });
  });
});
