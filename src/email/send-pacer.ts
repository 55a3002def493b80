import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { MicroBatch } from '../common/micro-batch';

/**
 * A sliding-window log in Redis: of waiters asking at once, each for `weight` slots (ARGV[4..], in order),
 * admits the longest prefix whose slots, with those taken in the last `window` ms by any worker (timed by the
 * Redis clock), stay within `limit`. Returns how many were admitted and, when not all were, the ms until the
 * first one left can have its slots.
 */
const ACQUIRE_SCRIPT = `
local key, limit, window, prefix = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)
local waiters = #ARGV - 3
local admitted, slots = 0, 0
while admitted < waiters and used + slots + tonumber(ARGV[4 + admitted]) <= limit do
  slots = slots + tonumber(ARGV[4 + admitted])
  admitted = admitted + 1
end
-- unpack() in Redis' Lua takes at most ~8000 values: add the slots in chunks.
local added = 0
while added < slots do
  local members = {}
  local chunk = math.min(slots - added, 1000)
  for i = 1, chunk do
    members[2 * i - 1] = now
    members[2 * i] = prefix .. ':' .. (added + i)
  end
  redis.call('ZADD', key, unpack(members))
  added = added + chunk
end
if slots > 0 then redis.call('PEXPIRE', key, window) end
if admitted == waiters then return {admitted, 0} end
-- The first waiter left needs its slots: wait until the entry whose expiry frees the last of them.
local index = used + slots + tonumber(ARGV[4 + admitted]) - limit - 1
local entry = redis.call('ZRANGE', key, index, index, 'WITHSCORES')
return {admitted, math.max(1, tonumber(entry[2]) + window - now)}
`;
const WINDOW_MS = 1000;
/** Waiters asking at once share one script call, up to this many. */
const MAX_BATCH = 500;

/**
 * The one send pacer of the installation (D-20): at most SMTP_MAX_RATE recipients are handed to the provider in
 * any one-second window, however many workers run (a provider's rate counts recipients, not transactions). A
 * message takes one slot per recipient, all of them at once; one with more recipients than the limit takes the
 * whole window, so it still goes. Bull's own queue limiter counts jobs in fixed windows (so up to twice the
 * rate across a window boundary) and delays rate-limited jobs, losing their priority order. The jobs of one
 * worker that ask at the same time ask Redis together: one call admits as many of them, in the order they
 * asked, as the window has room for; it never takes a slot nobody is waiting for.
 */
@Injectable()
export class SendPacer {
  private readonly key: string;
  private readonly limit: number;
  private readonly instance = randomBytes(6).toString('hex');
  private sequence = 0;
  private readonly batch: MicroBatch<number, number>;

  constructor(
    private readonly redis: RedisService,
    config: AppConfigService,
  ) {
    this.key = redis.key('email', 'send-pacer');
    this.limit = config.env.SMTP_MAX_RATE;
    redis.client.defineCommand('mailroomPacerAcquire', { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
    this.batch = new MicroBatch((weights) => this.ask(weights), MAX_BATCH, 1);
  }

  /** Waits until this worker may hand an email for `recipients` recipients to the provider. */
  async acquire(recipients: number): Promise<void> {
    const weight = Math.min(Math.max(1, recipients), this.limit);
    for (;;) {
      const waitMs = await this.batch.submit(weight);
      if (waitMs === 0) return;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }

  /** One script call for the waiters of these weights: 0 for each admitted one (the first), the wait for the others. */
  private async ask(weights: number[]): Promise<PromiseSettledResult<number>[]> {
    const client = this.redis.client as unknown as PacerClient;
    const prefix = `${this.instance}:${this.sequence++}`;
    const [admitted, waitMs] = (await client.mailroomPacerAcquire(this.key, this.limit, WINDOW_MS, prefix, ...weights)).map(Number);
    // A little jitter, so that the workers waiting do not all ask again at the same instant; the same for the
    // whole batch, so that its waiters ask again together, in their order.
    const wait = waitMs + Math.random() * 5;
    return weights.map((_, i) => ({ status: 'fulfilled', value: i < admitted ? 0 : wait }));
  }
}

interface PacerClient {
  mailroomPacerAcquire(key: string, limit: number, window: number, prefix: string, ...weights: number[]): Promise<[number, number]>;
}
