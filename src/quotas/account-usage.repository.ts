import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { usageStatement } from './usage-statement';
import { QuotaWindow, UnitCounts, windowOf, WindowUsage } from './quota-policy';

/** One sum per window and stored unit: `${window}_${unit}`. */
type UsageRow = Record<`${QuotaWindow}_${keyof UnitCounts}`, string>;

const WINDOWS = ['hour', 'day', 'month'] as const;
const UNITS = ['emails', 'submissions', 'forwards'] as const;

/** An account's emails (and forwards) as billing reads them. */
export interface EmailTotals {
  /** Ever. */
  totalEmails: number;
  lastEmailAt: Date | null;
  /** Recipients of forwarded mail in the current UTC calendar month: shown, not billed. */
  monthForwards: number;
  /** The current UTC calendar month's hours with emails (or credits), oldest first: billing cuts the month at plan changes. */
  monthHours: { hour: Date; emails: number }[];
}

/** account_usage_hourly as quotas and billing read it: what PostgreSQL holds is what was accepted (D-16). */
@Injectable()
export class AccountUsageRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The account's usage in the UTC hour, day and month holding `nowMs`, in one query. */
  async windows(accountId: string, nowMs: number): Promise<WindowUsage> {
    const [hour, day, month] = WINDOWS.map((w) => new Date(windowOf(w, nowMs).startMs));
    // The month is every row read; the day and the hour filter it ($3, $4).
    const since: Record<QuotaWindow, string> = { hour: ' FILTER (WHERE hour >= $4)', day: ' FILTER (WHERE hour >= $3)', month: '' };
    const sums = WINDOWS.flatMap((w) => UNITS.map((unit) => `COALESCE(sum(${unit})${since[w]}, 0)::bigint AS ${w}_${unit}`));
    const rows: UsageRow[] = await this.dataSource.query(
      `SELECT ${sums.join(', ')} FROM account_usage_hourly WHERE account_id = $1 AND hour >= $2`,
      [accountId, month, day, hour],
    );
    const row = rows[0];
    const countsOf = (w: QuotaWindow): UnitCounts => ({
      emails: Number(row[`${w}_emails`]),
      submissions: Number(row[`${w}_submissions`]),
      forwards: Number(row[`${w}_forwards`]),
    });
    return { hour: countsOf('hour'), day: countsOf('day'), month: countsOf('month') };
  }

  /**
   * The account's emails of the UTC calendar month holding `nowMs` (in all and by hour), of all time, and when the
   * last was accepted; and its forwards of that month. Read in `manager`'s transaction if given.
   */
  async emailTotals(accountId: string, nowMs: number, manager: EntityManager = this.dataSource.manager): Promise<EmailTotals> {
    const rows: {
      total_emails: string;
      last_email_at: Date | null;
      month_forwards: string;
      month_hours: { hour: string; emails: number }[];
    }[] = await manager.query(
      `SELECT COALESCE(sum(emails), 0)::bigint AS total_emails,
                max(last_email_at) AS last_email_at,
                COALESCE(sum(forwards) FILTER (WHERE hour >= $2), 0)::bigint AS month_forwards,
                COALESCE(json_agg(json_build_object('hour', hour, 'emails', emails) ORDER BY hour)
                           FILTER (WHERE hour >= $2 AND emails <> 0), '[]') AS month_hours
           FROM account_usage_hourly WHERE account_id = $1`,
      [accountId, new Date(windowOf('month', nowMs).startMs)],
    );
    const row = rows[0];
    return {
      totalEmails: Number(row.total_emails),
      lastEmailAt: row.last_email_at,
      monthForwards: Number(row.month_forwards),
      monthHours: row.month_hours.map(({ hour, emails }) => ({ hour: new Date(hour), emails: Number(emails) })),
    };
  }

  /** Adds reported emails to the account's row of the current hour (the statement acceptances use), in `manager`'s transaction if given. */
  async addEmails(accountId: string, emails: number, manager: EntityManager = this.dataSource.manager): Promise<void> {
    const params: unknown[] = [];
    const sql = usageStatement([{ accountId, emails, submissions: 0 }], (value) => `$${params.push(value)}`);
    if (sql) await manager.query(sql, params);
  }
}
