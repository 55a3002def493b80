import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';

/**
 * A soft bounce of an address (D-39): a provider's transient bounce, a full mailbox (5.2.x) or a DSN that failed with a
 * 4.x.x or 5.2.x Status. Counted
 * per account and address within SOFT_BOUNCE_WINDOW_DAYS; SOFT_BOUNCE_SUPPRESS_COUNT of them suppress the address.
 * One row per message and address, so that the same bounce reported twice (a DSN and a provider event, a retried
 * call) counts once; a delivery to the address, or its suppression, deletes its rows.
 */
@Entity('soft_bounces')
@Index('IX_soft_bounces_account_email_at', ['accountId', 'email', 'occurredAt'])
export class SoftBounce {
  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_soft_bounces' })
  accountId: string;

  /** Lower-cased address. */
  @PrimaryColumn({ type: 'varchar', length: 320, primaryKeyConstraintName: 'PK_soft_bounces' })
  email: string;

  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_soft_bounces' })
  messageId: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  occurredAt: Date;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'FK_soft_bounces_account' })
  account?: Account;
}
