import { randomBytes } from 'node:crypto';
import { HungRedis, startHungRedis } from '../../../test/support/hung-redis';
import { AppConfigService } from '../../config/app-config.service';
import { RedisService } from '../../redis/redis.service';
import { AcknowledgmentGate } from './acknowledgment-gate';

/** The once-an-hour acknowledgment claim, in the real Redis (127.0.0.1:6379 or TEST_REDIS_URL). */
describe('AcknowledgmentGate', () => {
  const prefix = `mailroom-unit:${randomBytes(4).toString('hex')}:`;
  const redis = new RedisService(
    AppConfigService.fromEnv({
      NODE_ENV: 'test',
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: prefix,
    }),
  );
  const gate = new AcknowledgmentGate(redis);

  afterAll(async () => {
    const keys = await redis.client.keys(`${prefix}*`);
    if (keys.length) await redis.client.del(...keys);
    await redis.onApplicationShutdown();
  });

  it('grants one acknowledgment per form and address an hour, the address compared lower-cased', async () => {
    const first = await gate.claim('frm_a', 'Ada@Example.org');
    expect(first).not.toBeNull();
    expect(await gate.claim('frm_a', ' ada@example.ORG ')).toBeNull();
    expect(await gate.claim('frm_a', 'bob@example.org')).not.toBeNull();
    expect(await gate.claim('frm_b', 'ada@example.org')).not.toBeNull();

    const [key] = await redis.client.keys(`${prefix}forms:ack:frm_a:*`);
    expect(key).not.toContain('ada');
    const ttl = await redis.client.pttl(key);
    expect(ttl).toBeGreaterThan(3_590_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
  });

  it('gives a claim back when its submission was not accepted, and never undoes a later one', async () => {
    const claim = await gate.claim('frm_c', 'eve@example.org');
    await claim!.giveBack();
    const again = await gate.claim('frm_c', 'eve@example.org');
    expect(again).not.toBeNull();
    // The first claim's give-back, repeated, does not free the second claim.
    await claim!.giveBack();
    expect(await gate.claim('frm_c', 'eve@example.org')).toBeNull();
  });

  describe('without Redis', () => {
    let silent: HungRedis;
    beforeAll(async () => {
      silent = await startHungRedis();
    });
    afterAll(() => silent.close());

    it('sends the acknowledgment unchecked, within half a second, when Redis does not answer', async () => {
      const url = silent.url;
      const hung = new RedisService(AppConfigService.fromEnv({ NODE_ENV: 'test', REDIS_URL: url }));
      const gateWithoutRedis = new AcknowledgmentGate(hung);
      try {
        const started = Date.now();
        const first = await gateWithoutRedis.claim('frm_d', 'ada@example.org');
        const second = await gateWithoutRedis.claim('frm_d', 'ada@example.org');
        expect([first, second].every((claim) => claim !== null)).toBe(true);
        await first!.giveBack();
        expect(Date.now() - started).toBeLessThan(1500);
      } finally {
        hung.client.disconnect();
      }
    });
  });
});
