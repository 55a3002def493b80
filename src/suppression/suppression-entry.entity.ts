import { Column, CreateDateColumn, Entity, Index } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

export const SUPPRESSION_REASONS = ['bounced', 'complained', 'unsubscribed', 'manual'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** An address the account never sends to again (D-19): bounced, complained, unsubscribed or added by hand. */
@Entity('suppression_entries')
@Index('UQ_suppression_entries_account_email', ['accountId', 'email'], { unique: true })
@Index('IDX_suppression_entries_account_created', ['accountId', 'createdAt', 'id'])
export class SuppressionEntry extends AccountOwned {
  /** Lower-cased address. */
  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column({ type: 'varchar', length: 20 })
  reason: SuppressionReason;

  /** What put the address here: a message id that bounced, "api", an unsubscribe token, … */
  @Column({ type: 'varchar', length: 200, nullable: true })
  source: string | null;

  /** Millisecond precision, so a list cursor built from it in JavaScript matches the stored value exactly. */
  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
