import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfigService, type AccountTier } from '../config/app-config.service';
import type { AuthContext } from '../common/auth/auth-context';
import { compileIpAllowlist } from '../common/http/ip-match';
import { RedisService } from '../redis/redis.service';
import { hashKey, keyTypeOf } from './key-format';

/** A key as the guard needs it: the AuthContext plus what it checks before handing it out. */
export interface ResolvedKey extends AuthContext {
  expiresAt: number | null;
  ipAllowed: ((ip: string | undefined) => boolean) | null;
}

/**
 * A found key is served from memory for at most this long after its lookup began, so a deleted key stops
 * within a second (D-8) even when no invalidation reaches this instance.
 */
const HIT_TTL_MS = 800;
/** A key still in use is looked up again in the background from this age on, so requests never wait for it. */
const REFRESH_AFTER_MS = 400;
const MISS_TTL_MS = 5_000;
const MAX_ENTRIES = 50_000;
const LAST_USED_FLUSH_MS = 5_000;
const CHANNEL = 'api-keys:invalidate';

interface Entry {
  key: ResolvedKey | null;
  /** When the lookup that produced the entry began: its snapshot is at least this old. */
  loadedAt: number;
}

/**
 * Resolves a presented secret to its key without a database round trip on the hot path. A secret of the
 * wrong shape is refused without a lookup. Deleting a key publishes its hash on Redis and every instance
 * drops it at once; a lookup that began before a drop is not cached, a subscriber that reconnected (and may
 * have missed drops) empties the cache, and found keys expire after HIT_TTL_MS whatever happens.
 */
@Injectable()
export class ApiKeyCache implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ApiKeyCache.name);
  private readonly entries = new Map<string, Entry>();
  /** Lookups under way, shared by concurrent requests for the same secret. */
  private readonly lookups = new Map<string, Promise<ResolvedKey | null>>();
  /** Moves on every drop: a lookup caches its result only if no drop happened while it ran. */
  private generation = 0;
  private readonly usedKeyIds = new Set<string>();
  private flushTimer?: NodeJS.Timeout;

  constructor(
    private readonly dataSource: DataSource,
    private readonly redis: RedisService,
    private readonly config: AppConfigService,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.redis.subscribe(
      CHANNEL,
      (message) => this.drop(message),
      () => this.drop('*'),
    );
    this.flushTimer = setInterval(() => void this.flushLastUsed(), LAST_USED_FLUSH_MS);
    this.flushTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.flushTimer);
    await this.flushLastUsed();
  }

  /** The key, or null when the secret is malformed or unknown. */
  async resolve(secret: string): Promise<ResolvedKey | null> {
    const known = this.cached(secret);
    return known === undefined ? this.lookUp(hashKey(secret)) : known;
  }

  /**
   * What is known without any I/O: the key, null (malformed, or unknown a moment ago), or undefined when
   * only a database lookup can tell.
   */
  cached(secret: string): ResolvedKey | null | undefined {
    if (keyTypeOf(this.config.keyPrefix, secret) === null) return null;
    const hash = hashKey(secret);
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    const age = Date.now() - entry.loadedAt;
    if (entry.key === null) return age < MISS_TTL_MS ? null : undefined;
    if (age >= HIT_TTL_MS) return undefined;
    if (age >= REFRESH_AFTER_MS) this.lookUp(hash).catch(() => undefined);
    return entry.key;
  }

  /** Records use; written to the database in batches, off the hot path. */
  touch(keyId: string): void {
    this.usedKeyIds.add(keyId);
  }

  /** Drops a key (by hash) from every instance's cache; '*' drops all (an account changed). */
  async invalidate(keyHash: string): Promise<void> {
    this.drop(keyHash);
    try {
      await this.redis.publish(CHANNEL, keyHash);
    } catch (err) {
      // Other instances stop serving the key when its entry expires (HIT_TTL_MS): still within D-8.
      this.logger.warn(`Could not announce a key change to other instances: ${(err as Error).message}`);
    }
  }

  private drop(keyHash: string): void {
    this.generation++;
    if (keyHash === '*') {
      this.entries.clear();
      this.lookups.clear();
    } else {
      this.entries.delete(keyHash);
      this.lookups.delete(keyHash);
    }
  }

  private lookUp(hash: string): Promise<ResolvedKey | null> {
    const pending = this.lookups.get(hash);
    if (pending) return pending;
    const generation = this.generation;
    const loadedAt = Date.now();
    const lookup = this.load(hash)
      .then((key) => {
        if (this.generation === generation) this.store(hash, { key, loadedAt });
        return key;
      })
      .finally(() => {
        if (this.lookups.get(hash) === lookup) this.lookups.delete(hash);
      });
    this.lookups.set(hash, lookup);
    return lookup;
  }

  private store(hash: string, entry: Entry): void {
    this.entries.delete(hash);
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(hash, entry);
  }

  private async load(hash: string): Promise<ResolvedKey | null> {
    const rows: KeyRow[] = await this.dataSource.query(
      `SELECT k.id, k.account_id, k.key_type, k.permissions, k.domain_scope, k.rate_limit, k.restrictions,
              k.expires_at, a.tier, a.is_operator
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
        WHERE k.key_hash = $1`,
      [hash],
    );
    const row = rows[0];
    if (!row) return null;
    const allowlist = row.restrictions?.ip_whitelist;
    return {
      keyId: row.id,
      accountId: row.account_id,
      accountTier: row.tier,
      isOperator: row.is_operator,
      keyType: row.key_type,
      permissions: row.permissions,
      domainScope: row.domain_scope,
      rateLimit: row.rate_limit,
      restrictions: row.restrictions ?? {},
      expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null,
      ipAllowed: allowlist?.length ? compileIpAllowlist(allowlist) : null,
    };
  }

  /** Writes the batch of lastUsedAt now (also runs every few seconds and at shutdown). */
  async flushLastUsed(): Promise<void> {
    if (this.usedKeyIds.size === 0) return;
    const ids = [...this.usedKeyIds];
    this.usedKeyIds.clear();
    try {
      await this.dataSource.query('UPDATE api_keys SET last_used_at = now() WHERE id = ANY($1)', [ids]);
    } catch (err) {
      this.logger.warn(`Could not record key use: ${(err as Error).message}`);
    }
  }
}

interface KeyRow {
  id: string;
  account_id: string;
  key_type: ResolvedKey['keyType'];
  permissions: ResolvedKey['permissions'];
  domain_scope: string | null;
  rate_limit: number;
  restrictions: ResolvedKey['restrictions'] | null;
  expires_at: string | Date | null;
  tier: AccountTier;
  is_operator: boolean;
}
