import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { usageStatement } from '../email/email.repository';
import { windowOf, WindowUsage } from './quota-policy';

interface UsageRow {
  hour_emails: string;
  hour_submissions: string;
  day_emails: string;
  day_submissions: string;
  month_emails: string;
  month_submissions: string;
}

/** An account's emails as billing reads them. */
export interface EmailTotals {
  /** In the current UTC calendar month. */
  monthEmails: number;
  /** Ever. */
  totalEmails: number;
  lastEmailAt: Date | null;
}

/** account_usage_hourly as quotas and billing read it: what PostgreSQL holds is what was accepted (D-16). */
@Injectable()
export class AccountUsageRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The account's usage in the UTC hour, day and month holding `nowMs`, in one query. */
  async windows(accountId: string, nowMs: number): Promise<WindowUsage> {
    const [hour, day, month] = (['hour', 'day', 'month'] as const).map((w) => new Date(windowOf(w, nowMs).startMs));
    const rows: UsageRow[] = await this.dataSource.query(
      `SELECT COALESCE(sum(emails) FILTER (WHERE hour >= $4), 0)::bigint AS hour_emails,
              COALESCE(sum(submissions) FILTER (WHERE hour >= $4), 0)::bigint AS hour_submissions,
              COALESCE(sum(emails) FILTER (WHERE hour >= $3), 0)::bigint AS day_emails,
              COALESCE(sum(submissions) FILTER (WHERE hour >= $3), 0)::bigint AS day_submissions,
              COALESCE(sum(emails), 0)::bigint AS month_emails,
              COALESCE(sum(submissions), 0)::bigint AS month_submissions
         FROM account_usage_hourly
        WHERE account_id = $1 AND hour >= $2`,
      [accountId, month, day, hour],
    );
    const row = rows[0];
    return {
      hour: { emails: Number(row.hour_emails), submissions: Number(row.hour_submissions) },
      day: { emails: Number(row.day_emails), submissions: Number(row.day_submissions) },
      month: { emails: Number(row.month_emails), submissions: Number(row.month_submissions) },
    };
  }

  /** The account's emails of the UTC calendar month holding `nowMs`, of all time, and when the last was accepted. */
  async emailTotals(accountId: string, nowMs: number): Promise<EmailTotals> {
    const rows: { month_emails: string; total_emails: string; last_email_at: Date | null }[] = await this.dataSource.query(
      `SELECT COALESCE(sum(emails) FILTER (WHERE hour >= $2), 0)::bigint AS month_emails,
              COALESCE(sum(emails), 0)::bigint AS total_emails,
              max(last_email_at) AS last_email_at
         FROM account_usage_hourly WHERE account_id = $1`,
      [accountId, new Date(windowOf('month', nowMs).startMs)],
    );
    const row = rows[0];
    return { monthEmails: Number(row.month_emails), totalEmails: Number(row.total_emails), lastEmailAt: row.last_email_at };
  }

  /** Adds reported emails to the account's row of the current hour (the statement acceptances use). */
  async addEmails(accountId: string, emails: number): Promise<void> {
    const params: unknown[] = [];
    const sql = usageStatement([{ accountId, emails, submissions: 0 }], (value) => `$${params.push(value)}`);
    if (sql) await this.dataSource.query(sql, params);
  }
}
