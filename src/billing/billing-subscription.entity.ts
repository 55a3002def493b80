import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import { BillingCustomer } from './billing-customer.entity';

export const SUBSCRIPTION_STATUSES = ['active', 'canceled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/**
 * A tenant's subscription to a plan of the catalog (`subs_…`). At most one is active per account (the
 * partial unique index decides between concurrent creations); canceled ones stay as history.
 */
@Entity('billing_subscriptions')
@Index('UQ_billing_subscriptions_active', ['accountId'], { unique: true, where: `"status" = 'active'` })
@Index('IDX_billing_subscriptions_account_created', ['accountId', 'createdAt'])
@Check('CHK_billing_subscriptions_status', `"status" IN ('active', 'canceled')`)
export class BillingSubscription extends AccountOwned {
  @Column({ type: 'varchar', length: 40 })
  customerId: string;

  @ManyToOne(() => BillingCustomer, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'customer_id' })
  customer?: BillingCustomer;

  /** A plan name of the catalog when it was chosen. */
  @Column({ type: 'varchar', length: 32 })
  plan: string;

  @Column({ type: 'varchar', length: 16 })
  status: SubscriptionStatus;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  canceledAt: Date | null;

  /**
   * This subscription moved the account from free to pro, so cancelling it moves the account back. False when
   * the account was pro or enterprise already, or the operator set its tier by hand since: cancelling keeps it.
   */
  @Column({ type: 'boolean', default: false })
  raisedTier: boolean;
}
