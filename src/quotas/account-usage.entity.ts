import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';

/**
 * What an account used in one hour (UTC): accepted email recipients, also those reported by
 * POST /api/billing/usage, accepted form submissions, and recipients of forwarded mail. Billing sums the months, quotas the hours, days
 * and months; rows are added to by upsert, so concurrent acceptances never lose a count.
 */
@Entity('account_usage_hourly')
export class AccountUsage {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The hour's start. */
  @PrimaryColumn({ type: 'timestamptz' })
  hour: Date;

  /** Less a cancelled email's credit (creditStatement): below zero in an hour credited for emails counted in another. */
  @Column({ type: 'bigint', default: 0 })
  emails: string;

  @Column({ type: 'bigint', default: 0 })
  submissions: string;

  /** Recipients of forwarded mail (D-37): their own quota, not emails, not billed. */
  @Column({ type: 'bigint', default: 0 })
  forwards: string;

  /** When the last of the hour's emails was accepted (billing info's lastEmailSent). */
  @Column({ type: 'timestamptz', nullable: true })
  lastEmailAt: Date | null;
}
