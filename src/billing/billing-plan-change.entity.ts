import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import type { AccountTier } from '../config/app-config.service';
import { BillingSubscription } from './billing-subscription.entity';

/**
 * A subscribe, plan change or cancel (`pch_…`), written in the transaction that made it: the billing period
 * is cut there, so that the plan that was active bills the emails and the time before it.
 */
@Entity('billing_plan_changes')
@Index('IDX_billing_plan_changes_account_at', ['accountId', 'at'])
export class BillingPlanChange extends AccountOwned {
  /** When the change was made (clock_timestamp(), after the transaction holds its locks). */
  @Column({ type: 'timestamptz' })
  at: Date;

  /** The plan from `at` on; null: no subscription from then on (canceled). */
  @Column({ type: 'varchar', length: 32, nullable: true })
  plan: string | null;

  /** The account's tier before and after the change: it decides the terms of the parts without a plan. */
  @Column({ type: 'varchar', length: 16 })
  tierBefore: AccountTier;

  @Column({ type: 'varchar', length: 16 })
  tierAfter: AccountTier;

  @Column({ type: 'varchar', length: 40 })
  subscriptionId: string;

  @ManyToOne(() => BillingSubscription, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'subscription_id' })
  subscription?: BillingSubscription;

  /**
   * The emails of the account's usage row of `at`'s hour when the change was made: they belong to the part
   * before it, the rest of that hour's emails to the part after.
   */
  @Column({ type: 'bigint' })
  hourEmailsBefore: string;
}
