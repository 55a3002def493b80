import { randomBytes } from 'node:crypto';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { SendPacer } from './send-pacer';

/** The pacer's Lua script in the real Redis (127.0.0.1:6379 or TEST_REDIS_URL): recipients are what it counts. */
describe('SendPacer', () => {
  const config = AppConfigService.fromEnv({
    NODE_ENV: 'test',
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: `mailroom-unit:${randomBytes(4).toString('hex')}:`,
    SMTP_MAX_RATE: '4',
  });
  let redis: RedisService;
  let pacer: SendPacer;

  beforeEach(() => {
    redis = new RedisService(config);
    pacer = new SendPacer(redis, config);
  });
  afterEach(async () => {
    await redis.client.del(redis.key('email', 'send-pacer'));
    await redis.onApplicationShutdown();
  });

  /** When each acquire resolved, in ms after the start, in the order given. */
  async function timesOf(recipients: number[]): Promise<number[]> {
    const start = Date.now();
    return Promise.all(recipients.map((n) => pacer.acquire(n).then(() => Date.now() - start)));
  }

  it('admits at most SMTP_MAX_RATE recipients a second, a message taking one slot per recipient', async () => {
    const [first, second, third] = await timesOf([3, 1, 3]);
    expect(first).toBeLessThan(300);
    expect(second).toBeLessThan(300);
    expect(third).toBeGreaterThanOrEqual(950);
  });

  it('keeps the order of the waiters: a large message is not overtaken by small ones asking after it', async () => {
    const [, large, small] = await timesOf([2, 3, 1]);
    expect(large).toBeGreaterThanOrEqual(950);
    expect(small).toBeGreaterThanOrEqual(large);
  });

  it('lets a message with more recipients than the limit go, alone in its second', async () => {
    const [big, next] = await timesOf([10, 1]);
    expect(big).toBeLessThan(300);
    expect(next).toBeGreaterThanOrEqual(950);
  });
});
