import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { newId } from '../common/ids';
import type { AccountTier } from '../config/app-config.service';
import { windowOf } from '../quotas/quota-policy';
import type { PlanChange } from './billing-period';

/** billing_plan_changes: where billing periods are cut. */
@Injectable()
export class PlanChangeRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Records a subscribe, plan change or cancel inside its transaction, once that holds its locks: `at` is
   * clock_timestamp() (not the transaction's start, which may precede a change it waited for), and the tier
   * after is the account's as the transaction left it. The emails of the hour's usage row so far belong before
   * the change. `tierBefore` null: the change left the tier as it was.
   */
  async record(
    manager: EntityManager,
    change: { accountId: string; subscriptionId: string; plan: string | null; tierBefore: AccountTier | null },
  ): Promise<void> {
    await manager.query(
      `INSERT INTO billing_plan_changes (id, account_id, at, plan, tier_before, tier_after, subscription_id, hour_emails_before)
       SELECT $1, a.id, c.at, $3, COALESCE($4, a.tier), a.tier, $5,
              COALESCE((SELECT u.emails FROM account_usage_hourly u
                         WHERE u.account_id = a.id AND u.hour = date_trunc('hour', c.at, 'UTC')), 0)
         FROM accounts a, (SELECT clock_timestamp() AS at) c
        WHERE a.id = $2`,
      [newId('pch'), change.accountId, change.plan, change.tierBefore, change.subscriptionId],
    );
  }

  /**
   * The latest change at or before the start of the UTC month holding `nowMs`, and those after it in the month,
   * oldest first. Read in `manager`'s transaction if given.
   */
  async ofMonth(accountId: string, nowMs: number, manager: EntityManager = this.dataSource.manager): Promise<PlanChange[]> {
    const { startMs, endMs } = windowOf('month', nowMs);
    const rows: { at: Date; plan: string | null; tier_before: AccountTier; tier_after: AccountTier; hour_emails_before: string }[] =
      await manager.query(
        `SELECT at, plan, tier_before, tier_after, hour_emails_before FROM billing_plan_changes
          WHERE account_id = $1 AND at < $3
            AND at >= COALESCE((SELECT max(at) FROM billing_plan_changes WHERE account_id = $1 AND at <= $2), '-infinity')
          ORDER BY at, id`,
        [accountId, new Date(startMs), new Date(endMs)],
      );
    return rows.map((row) => ({
      at: row.at,
      plan: row.plan,
      tierBefore: row.tier_before,
      tierAfter: row.tier_after,
      hourEmailsBefore: Number(row.hour_emails_before),
    }));
  }
}
