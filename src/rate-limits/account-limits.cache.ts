import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OUTAGE_GRACE_MS } from '../auth/key-freshness';
import { isDatabaseUnavailable } from '../common/errors/database-unavailable';
import { parsePlanLimits, PlanLimits } from './rate-limit.policy';

const TTL_MS = 30_000;
const MAX_ENTRIES = 50_000;
/** While PostgreSQL is unreachable, a last copy is served without asking again for this long. */
const OUTAGE_RETRY_MS = 1000;

/**
 * accounts.settings.limits per account, kept in process memory for 30 s: it is configuration, not
 * counter state, so instances may each hold a copy; an edit takes effect everywhere within 30 s. While
 * PostgreSQL cannot be reached, the last copy is served as long as ApiKeyCache serves the account's keys.
 */
@Injectable()
export class AccountLimitsCache {
  private readonly entries = new Map<string, { limits: PlanLimits; readAt: number; until: number }>();

  constructor(private readonly dataSource: DataSource) {}

  async get(accountId: string): Promise<PlanLimits> {
    const now = Date.now();
    const cached = this.entries.get(accountId);
    if (cached && cached.until > now) return cached.limits;
    let rows: { limits: unknown }[];
    try {
      rows = await this.dataSource.query(`SELECT settings -> 'limits' AS limits FROM accounts WHERE id = $1`, [accountId]);
    } catch (err) {
      if (!cached || !isDatabaseUnavailable(err) || now >= cached.readAt + OUTAGE_GRACE_MS) throw err;
      cached.until = Math.min(now + OUTAGE_RETRY_MS, cached.readAt + OUTAGE_GRACE_MS);
      return cached.limits;
    }
    const limits = parsePlanLimits(rows[0]?.limits);
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(accountId, { limits, readAt: now, until: now + TTL_MS });
    return limits;
  }

  /** The operator changed the account's limits: read them again on the next request (other instances within 30 s). */
  forget(accountId: string): void {
    this.entries.delete(accountId);
  }
}
