import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import type { EndpointLimits } from './webhook-endpoint-limits';
import { type DeliverWebhookJob, jobId } from './webhook.queue';

/**
 * One endpoint's gate, in one step timed by the Redis clock. KEYS: its leases (attempt → expiry), its queue
 * (attempt → when queued), its request starts of the last second, its pause (until when), the set of endpoints
 * whose queue holds attempts, and its health mark (present while its last judged attempt succeeded). ARGV: the
 * endpoint, an attempt to queue at the back ('' none) unless it is in flight, an attempt whose lease ends ('' none),
 * that attempt's outcome ('ok', 'failed', or '' when it says nothing about the endpoint), whether to take the head of
 * the queue ('1'), the endpoint's max concurrency, its rate per second (0 none), the lease in ms, how long the health
 * mark lasts in ms.
 * Without the health mark (a new endpoint, one whose last attempt failed, or one not heard from for a while) the
 * endpoint has one slot, whatever its max concurrency.
 * Returns {attempt taken or '', ms until the queue may move (paused, or at the rate limit) or 0, spare, opened}
 * where spare is how many more attempts could start at once, and opened is 1 when this step's success gave the
 * endpoint back its max concurrency.
 */
const ACQUIRE_SCRIPT = `
local leases, queue, starts, paused, endpoints, healthy = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local endpoint, queued, released, outcome, take = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5] == '1'
local max, rate, leaseMs, healthyMs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local opened = 0
if released ~= '' then redis.call('ZREM', leases, released) end
if outcome == 'ok' then
  if redis.call('EXISTS', healthy) == 0 then opened = 1 end
  redis.call('SET', healthy, '1', 'PX', healthyMs)
elseif outcome == 'failed' then
  redis.call('DEL', healthy)
end
if redis.call('EXISTS', healthy) == 0 then max = math.min(max, 1) end
redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
if queued ~= '' and not redis.call('ZSCORE', leases, queued) then redis.call('ZADD', queue, 'NX', now, queued) end
local waiting = redis.call('ZCARD', queue)
if waiting == 0 then
  redis.call('SREM', endpoints, endpoint)
  return {'', 0, 0, opened}
end
redis.call('SADD', endpoints, endpoint)
local pausedUntil = tonumber(redis.call('GET', paused) or '0')
if pausedUntil > now then return {'', pausedUntil - now, 0, opened} end
local free = max - redis.call('ZCARD', leases)
if free <= 0 then return {'', 0, 0, opened} end
if rate > 0 then
  redis.call('ZREMRANGEBYSCORE', starts, '-inf', now - 1000)
  local started = redis.call('ZCARD', starts)
  if started >= rate then
    local freeing = redis.call('ZRANGE', starts, started - rate, started - rate, 'WITHSCORES')
    return {'', math.max(1, tonumber(freeing[2]) + 1000 - now), 0, opened}
  end
  free = math.min(free, rate - started)
end
if not take then return {'', 0, math.min(free, waiting), opened} end
local head = redis.call('ZPOPMIN', queue)[1]
redis.call('ZADD', leases, now + leaseMs, head)
redis.call('PEXPIRE', leases, leaseMs)
if rate > 0 then
  redis.call('ZADD', starts, now, head .. '@' .. now)
  redis.call('PEXPIRE', starts, 1000)
end
if waiting == 1 then redis.call('SREM', endpoints, endpoint) end
return {head, 0, math.min(free - 1, waiting - 1), opened}
`;

/**
 * Of the attempts in ARGV, whether each waits in its endpoint's queue (KEYS[2i-1]) or holds a lease there that has
 * not lapsed by the Redis clock (KEYS[2i]): 1 or 0 each.
 */
const HELD_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = {}
for i = 1, #ARGV do
  local leaseEnds = redis.call('ZSCORE', KEYS[2 * i], ARGV[i])
  if redis.call('ZSCORE', KEYS[2 * i - 1], ARGV[i]) or (leaseEnds and tonumber(leaseEnds) > now) then held[i] = 1 else held[i] = 0 end
end
return held
`;

/** Pauses the endpoint (KEYS[1]) for ARGV[1] ms from now, unless it is paused for longer already. */
const PAUSE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms = tonumber(ARGV[1])
if now + ms > tonumber(redis.call('GET', KEYS[1]) or '0') then redis.call('SET', KEYS[1], now + ms, 'PX', ms) end
return 0
`;

/** A lease outlives the longest attempt by this much: a worker that died holds its slot no longer. */
const LEASE_MARGIN_MS = 30_000;
/** An endpoint not heard from for this long starts again at one slot, as a new one does. */
const HEALTHY_FOR_MS = 24 * 3600_000;
const SCAN_COUNT = 500;
/** Attempts one sweeper check of held() looks at in one script run. */
const HELD_PAGE = 500;

/** What an ended attempt says about its endpoint: it answered well, it failed, or nothing (not made, or not its fault). */
export type EndpointVerdict = 'ok' | 'failed' | null;

export interface Grant {
  /** The attempt to make now, holding one of the endpoint's slots; null when none. */
  run: DeliverWebhookJob | null;
  /** When > 0: the endpoint is paused or at its rate limit, and its queue may move again after this many ms. */
  waitMs: number;
  /** How many more of the endpoint's queued attempts could start now (more workers may be woken for them). */
  spare: number;
  /** The released attempt's success gave the endpoint back its max concurrency (it had one slot). */
  opened: boolean;
}

export interface AcquireRequest {
  /** Joins the back of the endpoint's queue (unless it is in flight already: a job run twice). */
  queued?: DeliverWebhookJob;
  /** Made: its slot is free again. */
  released?: DeliverWebhookJob;
  /** What the released attempt says about the endpoint: a failure leaves it one slot, a success gives it all. */
  verdict?: EndpointVerdict;
  /** Take a slot for the attempt at the head of the queue, if the endpoint has room. */
  take: boolean;
}

interface GateClient {
  mailroomWebhookAcquire(...args: (string | number)[]): Promise<[string, number, number, number]>;
  mailroomWebhookPause(key: string, ms: number): Promise<number>;
  mailroomWebhookHeld(...args: (string | number)[]): Promise<number[]>;
}

/**
 * Each webhook endpoint's own queue and slots, in Redis, shared by every worker process: at most its
 * maxConcurrency attempts at once while its last attempt succeeded and one otherwise (a slot is a lease that lapses
 * if its worker dies), at most its rateLimitPerSecond started in any second, none while it is paused after saying
 * it is overloaded. An attempt that finds no room waits in the endpoint's queue, holding no worker; an attempt that
 * ends hands its slot to the head of that queue.
 */
@Injectable()
export class WebhookEndpointGate {
  private readonly leaseMs: number;
  private readonly client: GateClient;

  constructor(
    private readonly redis: RedisService,
    config: AppConfigService,
  ) {
    this.leaseMs = config.env.WEBHOOK_TIMEOUT_MS + LEASE_MARGIN_MS;
    redis.client.defineCommand('mailroomWebhookAcquire', { numberOfKeys: 6, lua: ACQUIRE_SCRIPT });
    redis.client.defineCommand('mailroomWebhookPause', { numberOfKeys: 1, lua: PAUSE_SCRIPT });
    redis.client.defineCommand('mailroomWebhookHeld', { lua: HELD_SCRIPT });
    this.client = redis.client as unknown as GateClient;
  }

  async acquire(endpoint: string, limits: EndpointLimits, request: AcquireRequest): Promise<Grant> {
    const [run, waitMs, spare, opened] = await this.client.mailroomWebhookAcquire(
      this.key(endpoint, 'leases'),
      this.key(endpoint, 'queue'),
      this.key(endpoint, 'starts'),
      this.key(endpoint, 'paused'),
      this.endpointsKey,
      this.key(endpoint, 'healthy'),
      endpoint,
      request.queued ? jobId(request.queued) : '',
      request.released ? jobId(request.released) : '',
      request.verdict ?? '',
      request.take ? '1' : '0',
      limits.maxConcurrency,
      limits.rateLimitPerSecond ?? 0,
      this.leaseMs,
      HEALTHY_FOR_MS,
    );
    return {
      run: run ? parseJobId(run) : null,
      waitMs: Number(waitMs),
      spare: Math.max(0, Number(spare)),
      opened: Number(opened) === 1,
    };
  }

  /** No attempt starts at the endpoint for `ms` (those in flight finish). */
  async pause(endpoint: string, ms: number): Promise<void> {
    await this.client.mailroomWebhookPause(this.key(endpoint, 'paused'), Math.max(1, Math.round(ms)));
  }

  /** Of these attempts, those waiting in their endpoint's queue or in flight (their lease not lapsed by the Redis clock), by job id. */
  async held(attempts: (DeliverWebhookJob & { webhookId: string })[]): Promise<Set<string>> {
    const held = new Set<string>();
    for (let start = 0; start < attempts.length; start += HELD_PAGE) {
      const page = attempts.slice(start, start + HELD_PAGE);
      const keys = page.flatMap((a) => [this.key(a.webhookId, 'queue'), this.key(a.webhookId, 'leases')]);
      const answers = await this.client.mailroomWebhookHeld(keys.length, ...keys, ...page.map(jobId));
      for (const [i, a] of page.entries()) if (Number(answers[i]) === 1) held.add(jobId(a));
    }
    return held;
  }

  /** The endpoints whose queue holds attempts, a page at a time. */
  async *queuedEndpoints(): AsyncGenerator<string[]> {
    let cursor = '0';
    do {
      const [next, endpoints] = await this.redis.client.sscan(this.endpointsKey, cursor, 'COUNT', SCAN_COUNT);
      cursor = next;
      if (endpoints.length > 0) yield endpoints;
    } while (cursor !== '0');
  }

  /** Drops what Redis holds for an endpoint whose webhook is gone (its deliveries went with it). */
  async forget(endpoint: string): Promise<void> {
    const parts = ['leases', 'queue', 'starts', 'paused', 'healthy'] as const;
    await this.redis.client
      .multi()
      .del(...parts.map((part) => this.key(endpoint, part)))
      .srem(this.endpointsKey, endpoint)
      .exec();
  }

  private key(endpoint: string, part: 'leases' | 'queue' | 'starts' | 'paused' | 'healthy'): string {
    return this.redis.key('webhooks', 'endpoint', endpoint, part);
  }

  private get endpointsKey(): string {
    return this.redis.key('webhooks', 'queued-endpoints');
  }
}

function parseJobId(id: string): DeliverWebhookJob {
  const at = id.lastIndexOf(':');
  return { deliveryId: id.slice(0, at), attempt: Number(id.slice(at + 1)) };
}
