import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { MicroBatch } from '../common/micro-batch';

/**
 * A sliding-window log in Redis: of `count` sends asked for at once, admits as many as keep the sends of
 * the last `window` ms, by any worker, timed by the Redis clock, at most `limit`. Returns how many were
 * admitted and, when not all were, the ms until a slot frees up.
 */
const ACQUIRE_SCRIPT = `
local key, limit, window, count, prefix = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local admitted = math.max(0, math.min(count, limit - redis.call('ZCARD', key)))
if admitted > 0 then
  local members = {}
  for i = 1, admitted do
    members[2 * i - 1] = now
    members[2 * i] = prefix .. ':' .. i
  end
  redis.call('ZADD', key, unpack(members))
  redis.call('PEXPIRE', key, window)
end
if admitted == count then return {admitted, 0} end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {admitted, math.max(1, tonumber(oldest[2]) + window - now)}
`;
const WINDOW_MS = 1000;
/** Waiters asking at once share one script call (bounded: unpack() in Redis' Lua takes at most ~8000 values). */
const MAX_BATCH = 500;

/**
 * The one send pacer of the installation (D-20): at most SMTP_MAX_RATE emails are handed to the provider in
 * any one-second window, however many workers run. Bull's own queue limiter counts in fixed windows (so up
 * to twice the rate across a window boundary) and delays rate-limited jobs, losing their priority order.
 * The jobs of one worker that ask at the same time ask Redis together: one call admits as many of them, in
 * the order they asked, as the window has room for; it never takes a slot nobody is waiting for.
 */
@Injectable()
export class SendPacer {
  private readonly key: string;
  private readonly limit: number;
  private readonly instance = randomBytes(6).toString('hex');
  private sequence = 0;
  private readonly batch: MicroBatch<void, number>;

  constructor(
    private readonly redis: RedisService,
    config: AppConfigService,
  ) {
    this.key = redis.key('email', 'send-pacer');
    this.limit = config.env.SMTP_MAX_RATE;
    redis.client.defineCommand('mailroomPacerAcquire', { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
    this.batch = new MicroBatch((waiters) => this.ask(waiters.length), MAX_BATCH, 1);
  }

  /** Waits until this worker may hand one email to the provider. */
  async acquire(): Promise<void> {
    for (;;) {
      const waitMs = await this.batch.submit();
      if (waitMs === 0) return;
      // A little jitter, so that waiting workers do not all ask again at the same instant.
      await new Promise((resolve) => setTimeout(resolve, waitMs + Math.random() * 5));
    }
  }

  /** One script call for `count` waiters: 0 for each admitted one (the first), the wait for the others. */
  private async ask(count: number): Promise<PromiseSettledResult<number>[]> {
    const client = this.redis.client as unknown as PacerClient;
    const prefix = `${this.instance}:${this.sequence++}`;
    const [admitted, waitMs] = (await client.mailroomPacerAcquire(this.key, this.limit, WINDOW_MS, count, prefix)).map(Number);
    return Array.from({ length: count }, (_, i) => ({ status: 'fulfilled', value: i < admitted ? 0 : waitMs }));
  }
}

interface PacerClient {
  mailroomPacerAcquire(key: string, limit: number, window: number, count: number, prefix: string): Promise<[number, number]>;
}
