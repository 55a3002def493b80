import { Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';
import { EmailStatsColumns } from './email-stats-columns';

/**
 * The same counts per UTC day, kept by the same trigger in the same statement (after the hours): a 90-day window
 * reads 90 rows and at most 23 hours, not 2,160 hours.
 */
@Entity('email_stats_daily')
export class EmailStatsDaily extends EmailStatsColumns {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The UTC date. */
  @PrimaryColumn({ type: 'date' })
  day: string;
}
