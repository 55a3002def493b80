import { randomBytes } from 'node:crypto';
import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RedisService } from '../redis/redis.service';
import { SERVER_RUN_LUA } from '../redis/server-run';

/** Size of the filter in bits: 2 MiB in Redis, whatever the number of keys. */
export const FILTER_BITS = 2 ** 24;
/**
 * Bits per key. With six, a secret that is not a key "may exist" about once in 1,400 among a million keys,
 * once in 500 million among 100,000: such a secret costs one lookup, nothing worse.
 */
const BITS_PER_KEY = 6;
/** Bit 0 is set once the filter holds every stored key; no key's bit falls on it. */
const COMPLETE_BIT = 0;
const FILL_PAGE = 5_000;
const FILL_LOCK_MS = 60_000;
const RETRY_UNRECORDED_MS = 5_000;
/** A fill that failed (PostgreSQL or Redis away) is tried again no sooner than this. */
const RETRY_FILL_MS = 10_000;
/** Whether the filter is complete on this server run: answers 1 (every bit ARGV set), 0 (one is not), -1 (not complete). */
const CHECK_SCRIPT = `local run = ${SERVER_RUN_LUA}
if redis.call('GETBIT', KEYS[1], ${COMPLETE_BIT}) == 0 or redis.call('GET', KEYS[2]) ~= run then return -1 end
for i = 1, #ARGV do
  if redis.call('GETBIT', KEYS[1], ARGV[i]) == 0 then return 0 end
end
return 1`;
/** A fill's token, bound to the server run it began on. */
const START_FILL_SCRIPT = `redis.call('SET', KEYS[1], ARGV[1] .. ':' .. ${SERVER_RUN_LUA}, 'PX', ARGV[2])
return 1`;
/**
 * Marks the filter complete on this run only if the fill's token is still there and the server is the run the
 * fill began on: Redis kept every bit the fill set.
 */
const COMPLETE_SCRIPT = `local run = ${SERVER_RUN_LUA}
if redis.call('GET', KEYS[2]) == ARGV[1] .. ':' .. run then
  redis.call('SETBIT', KEYS[1], ${COMPLETE_BIT}, 1)
  redis.call('SET', KEYS[3], run)
  redis.call('DEL', KEYS[2])
  return 1
end
return 0`;

interface FilterClient {
  mailroomKnownKeysCheck(bitsKey: string, runKey: string, ...bits: number[]): Promise<1 | 0 | -1>;
}

/** The filter bits of a key hash (64 hex): six 24-bit slices of the sha256, never the completeness bit. */
export function filterBits(keyHash: string): number[] {
  const bits: number[] = [];
  for (let i = 0; i < BITS_PER_KEY; i++) {
    const slice = parseInt(keyHash.slice(i * 6, i * 6 + 6), 16);
    bits.push(1 + (slice % (FILTER_BITS - 1)));
  }
  return bits;
}

/**
 * A Bloom filter in Redis of the hashes of every stored key: it tells without PostgreSQL that a secret is
 * certainly not a key. The limiter asks it only for a client IP that used up its failed-authentication budget,
 * so that a valid key is still looked up there while an unknown one is refused without a lookup.
 *
 * Keys enter it before they are stored (ApiKeysService), so a key is in it before anyone holds it. Deleted keys
 * stay in it (a Bloom filter cannot forget): one costs a lookup, like a false positive. The filter counts only
 * once bit 0 is set, by a fill from api_keys that no Redis restart interrupted, and only on the server run it was
 * filled on (`known:run` holds that run_id): a Redis that restarted, empty or from an older snapshot that lacks
 * the keys made since, is filled again. Until then (first start, a restart, Redis cannot be reached) every
 * secret "may exist", which costs lookups and refuses no key.
 */
@Injectable()
export class KnownKeysFilter implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(KnownKeysFilter.name);
  private readonly bitsKey: string;
  private readonly fillLockKey: string;
  private readonly fillTokenKey: string;
  /** The run_id of the Redis server the filter was completed on. */
  private readonly runKey: string;
  /** Hashes Redis did not take when their keys were made (it was away): added again every few seconds. */
  private readonly unrecorded = new Set<string>();
  private filling: Promise<void> | null = null;
  private nextFillAt = 0;
  private stopping = false;
  private retryTimer?: NodeJS.Timeout;

  constructor(
    private readonly dataSource: DataSource,
    private readonly redis: RedisService,
  ) {
    this.bitsKey = redis.key('api-keys', 'known');
    this.fillLockKey = redis.key('api-keys', 'known', 'fill-lock');
    this.fillTokenKey = redis.key('api-keys', 'known', 'fill-token');
    this.runKey = redis.key('api-keys', 'known', 'run');
    redis.client.defineCommand('mailroomKnownKeysCheck', { numberOfKeys: 2, lua: CHECK_SCRIPT });
  }

  onApplicationBootstrap(): void {
    this.retryTimer = setInterval(() => void this.retryUnrecorded(), RETRY_UNRECORDED_MS);
    this.retryTimer.unref();
    void this.isComplete().then(
      (complete) => complete || this.fill(),
      () => undefined,
    );
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.retryTimer);
    await this.filling;
  }

  /** Adds a key about to be stored. Never fails: what Redis does not take now is added again later. */
  async add(keyHash: string): Promise<void> {
    try {
      await this.redis.client.call('BITFIELD', this.bitsKey, ...setBits(keyHash));
    } catch (err) {
      this.unrecorded.add(keyHash);
      this.logger.warn(`Could not add a new key to the known-keys filter, retrying: ${(err as Error).message}`);
    }
  }

  /** False only when the filter is complete and the hash is certainly not a stored key's. */
  async mayExist(keyHash: string): Promise<boolean> {
    if (this.unrecorded.size > 0) return true;
    let found: 1 | 0 | -1;
    try {
      found = await this.check(filterBits(keyHash));
    } catch {
      return true;
    }
    if (found === -1) this.fill();
    return found !== 0;
  }

  private async isComplete(): Promise<boolean> {
    return (await this.check([])) !== -1;
  }

  private check(bits: number[]): Promise<1 | 0 | -1> {
    return (this.redis.client as unknown as FilterClient).mailroomKnownKeysCheck(this.bitsKey, this.runKey, ...bits);
  }

  /** Fills the filter from api_keys in the background, one process at a time. */
  private fill(): void {
    if (this.filling || this.stopping || Date.now() < this.nextFillAt) return;
    this.nextFillAt = Date.now() + RETRY_FILL_MS;
    this.filling = this.redis
      .withLock(this.fillLockKey, FILL_LOCK_MS, () => this.fillFromDatabase())
      .then(
        () => undefined,
        (err: Error) => {
          if (!this.stopping) this.logger.warn(`Could not fill the known-keys filter, will try again: ${err.message}`);
        },
      )
      .finally(() => {
        this.filling = null;
      });
  }

  private async fillFromDatabase(): Promise<void> {
    // Redis losing its data or restarting mid-fill loses this token or its run: the filter is then not marked complete.
    const token = randomBytes(8).toString('hex');
    await this.redis.client.eval(START_FILL_SCRIPT, 1, this.fillTokenKey, token, 10 * FILL_LOCK_MS);
    let after = '';
    for (;;) {
      if (this.stopping) return;
      const rows: { key_hash: string }[] = await this.dataSource.query(
        'SELECT key_hash FROM api_keys WHERE key_hash > $1 ORDER BY key_hash LIMIT $2',
        [after, FILL_PAGE],
      );
      if (rows.length > 0) {
        const pipeline = this.redis.client.pipeline();
        for (const row of rows) pipeline.call('BITFIELD', this.bitsKey, ...setBits(row.key_hash));
        const failed = (await pipeline.exec())?.find(([err]) => err);
        if (failed) throw failed[0] as Error;
        after = rows[rows.length - 1].key_hash;
      }
      if (rows.length < FILL_PAGE) break;
    }
    if ((await this.redis.client.eval(COMPLETE_SCRIPT, 3, this.bitsKey, this.fillTokenKey, this.runKey, token)) !== 1) {
      this.logger.warn('Redis lost data while the known-keys filter was being filled: it will be filled again');
    }
  }

  private async retryUnrecorded(): Promise<void> {
    for (const keyHash of [...this.unrecorded]) {
      try {
        await this.redis.client.call('BITFIELD', this.bitsKey, ...setBits(keyHash));
        this.unrecorded.delete(keyHash);
      } catch {
        return;
      }
    }
  }
}

function setBits(keyHash: string): (string | number)[] {
  return filterBits(keyHash).flatMap((bit) => ['SET', 'u1', bit, 1]);
}
