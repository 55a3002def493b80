import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AccountTier } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { parseGlobalLimits, parseSettingsQuotas, QuotaAccount } from './quota-policy';

/** An account's quota data is read again after this long (an edit on another instance takes effect within it). */
const TTL_MS = 30_000;
/** A cached account still in use is read again in the background from this age on, so sends never wait for it. */
const REFRESH_AFTER_MS = 20_000;
const MAX_ENTRIES = 50_000;
const CHANNEL = 'quotas:account-changed';

interface Entry {
  account: QuotaAccount | null;
  loadedAt: number;
}

interface AccountRow {
  tier: AccountTier;
  created_at: Date;
  is_operator: boolean;
  quotas: unknown;
  global_limits: unknown;
}

/**
 * What the quotas need of an account (tier, created_at, operator, settings.quotas, settings.global_limits),
 * in process memory for 30 s like AccountLimitsCache: configuration, not counters. A change (billing moving
 * the tier, a settings PATCH) drops the account on every instance over Redis pub/sub; a load that began before
 * a drop is not kept.
 */
@Injectable()
export class QuotaAccountsCache implements OnModuleInit {
  private readonly logger = new Logger(QuotaAccountsCache.name);
  private readonly entries = new Map<string, Entry>();
  private readonly loads = new Map<string, Promise<QuotaAccount | null>>();
  /** Moves on every drop: a load keeps its result only if no drop happened while it ran. */
  private generation = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly redis: RedisService,
  ) {}

  async onModuleInit(): Promise<void> {
    // A subscriber that reconnected may have missed drops: forget everything then.
    await this.redis.subscribe(
      CHANNEL,
      (accountId) => this.forget(accountId),
      () => this.forget('*'),
    );
  }

  /** The account, or null when it does not exist. */
  get(accountId: string): Promise<QuotaAccount | null> | QuotaAccount | null {
    const entry = this.entries.get(accountId);
    if (entry) {
      const age = Date.now() - entry.loadedAt;
      if (age < TTL_MS) {
        if (age >= REFRESH_AFTER_MS) this.load(accountId).catch(() => undefined);
        return entry.account;
      }
    }
    return this.load(accountId);
  }

  /** Drops the account here and on every other instance. */
  async changed(accountId: string): Promise<void> {
    this.forget(accountId);
    try {
      await this.redis.publish(CHANNEL, accountId);
    } catch (err) {
      this.logger.warn(
        `Could not announce an account change to other instances (they read it again within 30 s): ${(err as Error).message}`,
      );
    }
  }

  private forget(accountId: string): void {
    this.generation++;
    if (accountId === '*') {
      this.entries.clear();
      this.loads.clear();
    } else {
      this.entries.delete(accountId);
      this.loads.delete(accountId);
    }
  }

  private load(accountId: string): Promise<QuotaAccount | null> {
    const pending = this.loads.get(accountId);
    if (pending) return pending;
    const generation = this.generation;
    const loadedAt = Date.now();
    const load = this.read(accountId)
      .then((account) => {
        if (this.generation === generation) {
          this.entries.delete(accountId);
          if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
          this.entries.set(accountId, { account, loadedAt });
        }
        return account;
      })
      .finally(() => {
        if (this.loads.get(accountId) === load) this.loads.delete(accountId);
      });
    this.loads.set(accountId, load);
    return load;
  }

  private async read(accountId: string): Promise<QuotaAccount | null> {
    const rows: AccountRow[] = await this.dataSource.query(
      `SELECT tier, created_at, is_operator, settings -> 'quotas' AS quotas, settings -> 'global_limits' AS global_limits
         FROM accounts WHERE id = $1`,
      [accountId],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      tier: row.tier,
      createdAt: new Date(row.created_at),
      isOperator: row.is_operator,
      quotas: parseSettingsQuotas(row.quotas),
      globalLimits: parseGlobalLimits(row.global_limits),
    };
  }
}
