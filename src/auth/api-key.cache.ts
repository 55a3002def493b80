import { Injectable, Logger, BeforeApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfigService, type AccountTier } from '../config/app-config.service';
import type { AuthContext } from './auth-context';
import { isDatabaseUnavailable } from '../common/errors/database-unavailable';
import { compileIpAllowlist } from '../common/http/ip-match';
import { RedisService } from '../redis/redis.service';
import { hashKey, keyTypeOf } from './key-format';
import { CachedLookup, cachedUse, servedThroughOutage, servedUntilAfterLookup } from './key-freshness';
import { KnownKeysFilter } from './known-keys.filter';

/** A key as the guard needs it: the AuthContext plus what it checks before handing it out. */
export interface ResolvedKey extends AuthContext {
  expiresAt: number | null;
  ipAllowed: ((ip: string | undefined) => boolean) | null;
}

const MAX_ENTRIES = 50_000;
const LAST_USED_FLUSH_MS = 5_000;
const CHANNEL = 'api-keys:invalidate';

interface Entry extends CachedLookup {
  key: ResolvedKey | null;
}

/**
 * Resolves a presented secret to its key without a database round trip on the hot path. A secret of the
 * wrong shape is refused without a lookup. Deleting or changing a key publishes its hash on Redis and every
 * instance drops it at once; a lookup that began before a drop is not cached, a subscriber that reconnected
 * (and may have missed drops) empties the cache, and found keys are looked up again after HIT_TTL_MS whatever
 * happens (key-freshness.ts). When that lookup fails because PostgreSQL cannot be reached, the last good copy
 * is served for up to OUTAGE_GRACE_MS; a dropped key has no copy left, so an outage never revives one.
 */
@Injectable()
export class ApiKeyCache implements OnModuleInit, BeforeApplicationShutdown {
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
    private readonly knownKeys: KnownKeysFilter,
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

  /**
   * Before any store closes: the global modules' shutdown hooks run last, after the requests have drained, and
   * TypeORM's DataSource may close before this module's own onApplicationShutdown.
   */
  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.flushTimer);
    await this.flushLastUsed();
  }

  /**
   * The key, or null when the secret is malformed or unknown. Rejects with the database's error when the key
   * cannot be looked up and has no copy young enough to serve (answered 503 by the exceptions filter).
   */
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
    const use = cachedUse(entry, Date.now());
    if (use === 'look-up') return undefined;
    if (use === 'serve-and-refresh') this.lookUp(hash).catch(() => undefined);
    return entry.key;
  }

  /**
   * False only when the secret is certainly not a stored key's, known without PostgreSQL (KnownKeysFilter);
   * the limiter asks before it spends a lookup on a client IP that used up its failed-authentication budget.
   */
  mayExist(secret: string): Promise<boolean> {
    return this.knownKeys.mayExist(hashKey(secret));
  }

  /** Records a key about to be stored (by its hash), so that no budget ever refuses it unlooked-up. */
  async added(keyHash: string): Promise<void> {
    await this.knownKeys.add(keyHash);
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
      // Other instances look the key up again when their entry expires (HIT_TTL_MS): still within D-8 while
      // PostgreSQL answers them.
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
      .then(
        (key) => {
          if (this.generation === generation) {
            this.store(hash, { key, found: key !== null, loadedAt, servedUntil: servedUntilAfterLookup(key !== null, loadedAt) });
          }
          return key;
        },
        (err: unknown) => this.lastGoodCopy(hash, err),
      )
      .finally(() => {
        if (this.lookups.get(hash) === lookup) this.lookups.delete(hash);
      });
    this.lookups.set(hash, lookup);
    return lookup;
  }

  /**
   * The copy of a found key to serve when its lookup failed because PostgreSQL cannot be reached: the entry
   * still held (a drop removed it, so a deleted or changed key has none) while it is young enough. Else the
   * lookup's error stands.
   */
  private lastGoodCopy(hash: string, err: unknown): ResolvedKey {
    const entry = this.entries.get(hash);
    const servedUntil = entry?.key && isDatabaseUnavailable(err) ? servedThroughOutage(entry.loadedAt, Date.now()) : null;
    if (!entry?.key || servedUntil === null) throw err;
    entry.servedUntil = servedUntil;
    return entry.key;
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
      // Kept for the next flush: keys keep working through a PostgreSQL outage, their use is written after it.
      for (const id of ids) this.usedKeyIds.add(id);
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
  rate_limit: number | null;
  restrictions: ResolvedKey['restrictions'] | null;
  expires_at: string | Date | null;
  tier: AccountTier;
  is_operator: boolean;
}
