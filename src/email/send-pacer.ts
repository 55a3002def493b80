import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';

/**
 * A sliding-window log in Redis: admits a send only if fewer than `limit` sends were admitted in the last
 * `window` ms, by any worker, timed by the Redis clock. Returns 0 when admitted, else the ms until a slot
 * frees up.
 */
const ACQUIRE_SCRIPT = `
local key, limit, window, member = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  return 0
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
`;
const WINDOW_MS = 1000;

/**
 * The one send pacer of the installation (D-20): at most SMTP_MAX_RATE emails are handed to the provider in
 * any one-second window, however many workers run. Bull's own queue limiter counts in fixed windows (so up
 * to twice the rate across a window boundary) and delays rate-limited jobs, losing their priority order.
 */
@Injectable()
export class SendPacer {
  private readonly key: string;
  private readonly limit: number;
  private readonly instance = randomBytes(6).toString('hex');
  private sequence = 0;

  constructor(
    private readonly redis: RedisService,
    config: AppConfigService,
  ) {
    this.key = redis.key('email', 'send-pacer');
    this.limit = config.env.SMTP_MAX_RATE;
    redis.client.defineCommand('mailroomPacerAcquire', { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
  }

  /** Waits until this worker may hand one email to the provider. */
  async acquire(): Promise<void> {
    for (;;) {
      const member = `${this.instance}:${this.sequence++}`;
      const client = this.redis.client as unknown as PacerClient;
      const waitMs = Number(await client.mailroomPacerAcquire(this.key, this.limit, WINDOW_MS, member));
      if (waitMs === 0) return;
      // A little jitter, so that waiting workers do not all ask again at the same instant.
      await new Promise((resolve) => setTimeout(resolve, waitMs + Math.random() * 5));
    }
  }
}

interface PacerClient {
  mailroomPacerAcquire(key: string, limit: number, window: number, member: string): Promise<number>;
}
