import { randomBytes } from 'node:crypto';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import type { QuotaRule } from './quota-policy';
import { QUOTAS, windowOf } from './quota-policy';
import { QuotaStore } from './quota.store';

/**
 * The counters under the Redis server's run, in the real Redis (127.0.0.1:6379 or TEST_REDIS_URL): a counter
 * another run of the server left (a restored snapshot) is never read, and a script on another run moves nothing.
 */
describe('QuotaStore (counters under the server run)', () => {
  const prefix = `mailroom-unit:${randomBytes(4).toString('hex')}:`;
  const config = AppConfigService.fromEnv({
    NODE_ENV: 'test',
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: prefix,
  });
  const redis = new RedisService(config);
  const store = new QuotaStore(redis, config);
  const OTHER_RUN = 'f'.repeat(40);
  let run: string;
  let n = 0;

  const rule = (limit: number): QuotaRule => ({
    quota: QUOTAS[0],
    limit,
    cost: 1,
    key: redis.key('quota', `acc${++n}`, 'emails', 'm202611'),
    window: windowOf('month', Date.now()),
    ttlMs: 60_000,
  });

  beforeAll(async () => {
    await store.onModuleInit();
    run = /run_id:(\w+)/.exec(await redis.client.info('server'))![1];
  });
  afterAll(async () => {
    const keys = await redis.client.keys(`${prefix}*`);
    if (keys.length) await redis.client.del(...keys);
    await store.onApplicationShutdown();
    await redis.onApplicationShutdown();
  });

  it('keeps each counter under the run of the server, learnt from the first script call', async () => {
    const r = rule(10);
    expect(await store.reserveTogether([{ rules: [r], inits: [3] }])).toEqual([{ status: 'reserved', values: [4] }]);
    expect(await redis.client.get(`${r.key}:${run}`)).toBe('4');
    expect(await redis.client.exists(r.key)).toBe(0);

    await store.adjust([r.key], [-2]);
    expect(await redis.client.get(`${r.key}:${run}`)).toBe('2');
    await store.drop([r.key]);
    expect(await redis.client.exists(`${r.key}:${run}`)).toBe(0);
  });

  it('never reads a counter of another run, nor one named without a run', async () => {
    const r = rule(10);
    // What a snapshot restored from an earlier run of the server, or from a version before runs, holds.
    await redis.client.set(`${r.key}:${OTHER_RUN}`, 1);
    await redis.client.set(r.key, 1);
    expect(await store.reserve([r])).toEqual({ status: 'missing', values: [-1] });
    await store.adjust([r.key], [5]);
    expect(await redis.client.mget(`${r.key}:${OTHER_RUN}`, r.key)).toEqual(['1', '1']);
  });

  it('moves nothing in a script called for another run, and names the server’s run instead', async () => {
    const r = rule(10);
    const onOtherRun = `${r.key}:${OTHER_RUN}`;
    await redis.client.set(onOtherRun, 1);
    const { connection } = store;
    expect(await connection.quotaReserve(1, onOtherRun, OTHER_RUN, 1, 1, 10, 1, 5, 60_000)).toEqual([-2, run]);
    expect(await connection.quotaAdjust(1, onOtherRun, OTHER_RUN, 5)).toEqual([-2, run]);
    expect(await connection.quotaDrop(1, onOtherRun, OTHER_RUN)).toEqual([-2, run]);
    expect(await redis.client.get(onOtherRun)).toBe('1');
  });
});
