import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { allFulfilled, MicroBatch } from '../common/micro-batch';
import { AppConfigService } from '../config/app-config.service';
import type { RedisConnection } from '../redis/redis-connection';
import { RedisService } from '../redis/redis.service';
import type { QuotaRule } from './quota-policy';
import { QUOTA_ADJUST_LUA, QUOTA_DROP_LUA, QUOTA_RESERVE_LUA } from './quota.script';

/** What a counter script answers on a server run other than the one its keys were named for: [-2, that run]. */
type RunChanged = [typeof RUN_CHANGED, string];

type QuotaConnection = RedisConnection & {
  quotaReserve(keyCount: number, ...args: (string | number)[]): Promise<number[] | RunChanged>;
  quotaAdjust(keyCount: number, ...args: (string | number)[]): Promise<1 | RunChanged>;
  quotaDrop(keyCount: number, ...args: (string | number)[]): Promise<1 | RunChanged>;
};

/** values: each counter's, after the reservation (reserved), as it is (refused), or -1 where missing. */
export interface ReserveReply {
  status: 'reserved' | 'refused' | 'missing';
  values: number[];
}

export interface Reservation {
  rules: readonly QuotaRule[];
  /** Values to set missing counters to (-1: report it missing instead). */
  inits?: readonly number[];
}

/** Reservations that arrive while a call runs wait for the next one; so busy periods share round trips. */
const MAX_BATCH = 200;
const MAX_CONCURRENT_CALLS = 4;
const STATUS: Record<number, ReserveReply['status']> = { 1: 'reserved', 0: 'refused', [-1]: 'missing' };
const RUN_CHANGED = -2;
/** Tries of one call, each on the run the one before found, before it fails (Redis restarting again and again). */
const MAX_RUN_CHANGES = 3;

/**
 * The quota counters in Redis, on a connection of their own that never queues (like the limiter's): when
 * Redis is away a call fails at once, or after RATE_LIMIT_REDIS_TIMEOUT_MS, and QuotaService checks against
 * PostgreSQL instead. Concurrent reservations share one script call.
 *
 * A counter lives under the run of the server that holds it (`<counter key>:<run_id>`), and every script checks
 * that run in the call that reads or moves the counters. A Redis that restarted, from a snapshot older and lower
 * than the truth or from nothing, or a replica promoted in its place, is another run: its counters are all
 * missing and load from PostgreSQL, and those of earlier runs are never read again (they expire).
 */
@Injectable()
export class QuotaStore implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(QuotaStore.name);
  readonly connection: QuotaConnection;
  /** The server run the counters' keys are named for: '' until a script names it. */
  private runId = '';
  private readonly reservations = new MicroBatch<Reservation, ReserveReply>(
    (batch) => this.reserveBatch(batch),
    MAX_BATCH,
    MAX_CONCURRENT_CALLS,
  );

  constructor(redis: RedisService, config: AppConfigService) {
    this.connection = redis.connect('quotas', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: config.env.RATE_LIMIT_REDIS_TIMEOUT_MS,
    }) as QuotaConnection;
    this.connection.defineCommand('quotaReserve', { lua: QUOTA_RESERVE_LUA });
    this.connection.defineCommand('quotaAdjust', { lua: QUOTA_ADJUST_LUA });
    this.connection.defineCommand('quotaDrop', { lua: QUOTA_DROP_LUA });
  }

  async onModuleInit(): Promise<void> {
    try {
      await this.connection.connect();
    } catch (err) {
      this.logger.warn(`Quotas cannot reach Redis yet (${(err as Error).message}): checking against PostgreSQL until they can`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection.quit().catch(() => undefined);
  }

  /** Adds every rule's cost if all of them allow it (sharing a call with concurrent reservations). */
  reserve(rules: readonly QuotaRule[]): Promise<ReserveReply> {
    return this.reservations.submit({ rules });
  }

  /** Decides the reservations in turn in one call of their own: nothing else runs between them. */
  async reserveTogether(reservations: Reservation[]): Promise<ReserveReply[]> {
    return (await this.reserveBatch(reservations)).map((outcome) => (outcome as PromiseFulfilledResult<ReserveReply>).value);
  }

  private async reserveBatch(batch: Reservation[]): Promise<PromiseSettledResult<ReserveReply>[]> {
    const keys: string[] = [];
    const args: (string | number)[] = [batch.length];
    for (const { rules, inits } of batch) {
      args.push(rules.length);
      rules.forEach((rule, i) => {
        keys.push(rule.key);
        args.push(rule.limit, rule.cost, inits ? inits[i] : -1, rule.ttlMs);
      });
    }
    const reply = await this.onServerRun(keys, (runKeys, runId) => this.connection.quotaReserve(keys.length, ...runKeys, runId, ...args));
    let at = 0;
    return allFulfilled(
      batch.map(({ rules }): ReserveReply => {
        const status = STATUS[reply[at]];
        const values = reply.slice(at + 1, at + 1 + rules.length);
        at += 1 + rules.length;
        return { status, values };
      }),
    );
  }

  /** Adds `amounts[i]` to counter `keys[i]` where it exists. */
  async adjust(keys: readonly string[], amounts: readonly number[]): Promise<void> {
    if (keys.length === 0) return;
    await this.onServerRun(keys, (runKeys, runId) => this.connection.quotaAdjust(keys.length, ...runKeys, runId, ...amounts));
  }

  async drop(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.onServerRun(keys, (runKeys, runId) => this.connection.quotaDrop(keys.length, ...runKeys, runId));
  }

  /** The Redis key of the counter `key` on a server run (by default the one last seen). */
  runKey(key: string, runId = this.runId): string {
    return `${key}:${runId}`;
  }

  /**
   * Calls a counter script with the keys named for the server run last seen. A script on another run changes
   * nothing and names its run: the keys are named for that one and the script is called again.
   */
  private async onServerRun<T>(keys: readonly string[], call: (runKeys: string[], runId: string) => Promise<T | RunChanged>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const runId = this.runId;
      const reply = await call(
        keys.map((key) => this.runKey(key, runId)),
        runId,
      );
      if (!isRunChanged(reply)) return reply;
      if (attempt === MAX_RUN_CHANGES) throw new Error(`the Redis server changed runs ${attempt} times during one quota call`);
      if (this.runId === runId) {
        this.runId = reply[1];
        if (runId)
          this.logger.warn(`Redis restarted or failed over (run ${runId} → ${reply[1]}): quota counters load again from PostgreSQL`);
      }
    }
  }
}

function isRunChanged(reply: unknown): reply is RunChanged {
  return Array.isArray(reply) && reply[0] === RUN_CHANGED && typeof reply[1] === 'string';
}
