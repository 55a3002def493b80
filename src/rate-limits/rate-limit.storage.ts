import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { AppConfigService } from '../config/app-config.service';
import type { RedisConnection } from '../redis/redis-connection';
import { RedisService } from '../redis/redis.service';
import { RATE_LIMIT_LUA } from './rate-limit.script';
import { CountMode, LimitDecision, LimitRule } from './rate-limit.types';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;
/** The script's `move` argument. */
const MOVE_ARGUMENT: Record<CountMode, number> = { never: 0, 'if-allowed': 1, always: 2 };

type LimiterConnection = RedisConnection & { rateLimit(keyCount: number, ...args: (string | number)[]): Promise<number[]> };

/**
 * The limiter's counters in Redis, on a connection of its own that never queues: when Redis is away a
 * call fails at once (or after RATE_LIMIT_REDIS_TIMEOUT_MS) and the limiter counts in process instead.
 *
 * It is @nestjs/throttler's storage (increment() serves ThrottlerGuard for one limit), and consume()
 * decides all of a request's limits in one script call.
 */
@Injectable()
export class RateLimitStorage implements ThrottlerStorage, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RateLimitStorage.name);
  readonly connection: LimiterConnection;

  constructor(
    private readonly redis: RedisService,
    config: AppConfigService,
  ) {
    this.connection = redis.connect('rate-limit', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: config.env.RATE_LIMIT_REDIS_TIMEOUT_MS,
      // Concurrent requests share one write to Redis: the limiter's cost stays flat under load.
      enableAutoPipelining: true,
    }) as LimiterConnection;
    this.connection.defineCommand('rateLimit', { lua: RATE_LIMIT_LUA });
  }

  async onModuleInit(): Promise<void> {
    // ThrottlerModule holds this same instance as its storage provider, so Nest calls this twice.
    if (this.connection.status !== 'wait') return;
    try {
      await this.connection.connect();
    } catch (err) {
      this.logger.warn(`Rate limiter cannot reach Redis yet (${(err as Error).message}): counting in process until it can`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection.quit().catch(() => undefined);
  }

  /** Decides every rule at once, and moves the counters by `cost` as `mode` says (CountMode). */
  async consume(rules: readonly LimitRule[], cost: number, nowMs: number, mode: CountMode = 'if-allowed'): Promise<LimitDecision> {
    const args: (string | number)[] = rules.map((rule) => rule.key);
    args.push(nowMs, cost, MOVE_ARGUMENT[mode]);
    for (const rule of rules) {
      if (rule.kind === 'window') args.push('w', rule.limit, rule.windowMs);
      else args.push('b', rule.limit, rule.refillPerMinute / 60_000);
    }
    const reply = await this.connection.rateLimit(rules.length, ...args);
    return {
      allowed: reply[0] === 1,
      states: rules.map((rule, i) => ({
        rule,
        remaining: reply[1 + i * 3],
        resetAtMs: reply[2 + i * 3],
        retryAfterMs: reply[3 + i * 3],
      })),
    };
  }

  /** ThrottlerStorage: one sliding window of `ttl` ms; a refused hit reports the wait as the block. */
  async increment(key: string, ttl: number, limit: number, _blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const rule: LimitRule = {
      scope: 'endpoint',
      window: 'minute',
      kind: 'window',
      key: this.redis.key('rl', 'throttler', throttlerName, key),
      limit,
      windowMs: ttl,
    };
    const { allowed, states } = await this.consume([rule], 1, Date.now());
    const [state] = states;
    return {
      totalHits: allowed ? limit - state.remaining : limit + 1,
      timeToExpire: Math.ceil((state.resetAtMs - Date.now()) / 1000),
      isBlocked: !allowed,
      timeToBlockExpire: Math.ceil(state.retryAfterMs / 1000),
    };
  }
}
