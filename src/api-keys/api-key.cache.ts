import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AccountTier } from '../config/app-config.service';
import type { AuthContext } from '../common/auth/auth-context';
import { compileIpAllowlist } from '../common/http/ip-match';
import { RedisService } from '../redis/redis.service';
import { hashKey } from './key-format';

/** A key as the guard needs it: the AuthContext plus what it checks before handing it out. */
export interface ResolvedKey extends AuthContext {
  expiresAt: number | null;
  ipAllowed: ((ip: string | undefined) => boolean) | null;
}

const HIT_TTL_MS = 60_000;
const MISS_TTL_MS = 5_000;
const MAX_ENTRIES = 50_000;
const LAST_USED_FLUSH_MS = 5_000;
const CHANNEL = 'api-keys:invalidate';

interface Entry {
  key: ResolvedKey | null;
  until: number;
}

/**
 * Resolves a presented secret to its key without a database round trip on the hot path: entries live in
 * process memory for a minute. Deleting or changing a key publishes its hash on Redis, and every instance
 * drops the entry at once, so a deleted key stops working everywhere well within a second.
 */
@Injectable()
export class ApiKeyCache implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ApiKeyCache.name);
  private readonly entries = new Map<string, Entry>();
  private readonly usedKeyIds = new Set<string>();
  private flushTimer?: NodeJS.Timeout;

  constructor(
    private readonly dataSource: DataSource,
    private readonly redis: RedisService,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.redis.subscribe(CHANNEL, (message) => {
      if (message === '*') this.entries.clear();
      else this.entries.delete(message);
    });
    this.flushTimer = setInterval(() => void this.flushLastUsed(), LAST_USED_FLUSH_MS);
    this.flushTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.flushTimer);
    await this.flushLastUsed();
  }

  async resolve(secret: string): Promise<ResolvedKey | null> {
    const hash = hashKey(secret);
    const now = Date.now();
    const cached = this.entries.get(hash);
    if (cached && cached.until > now) return cached.key;

    const key = await this.load(hash);
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(hash, { key, until: now + (key ? HIT_TTL_MS : MISS_TTL_MS) });
    return key;
  }

  /** Records use; written to the database in batches, off the hot path. */
  touch(keyId: string): void {
    this.usedKeyIds.add(keyId);
  }

  /** Drops a key (by hash) from every instance's cache; '*' drops all (an account changed). */
  async invalidate(keyHash: string | '*'): Promise<void> {
    if (keyHash === '*') this.entries.clear();
    else this.entries.delete(keyHash);
    await this.redis.publish(CHANNEL, keyHash);
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
