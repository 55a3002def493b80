import { Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';
import { EmailStatsColumns } from './email-stats-columns';

/**
 * What happened to an account's messages in one UTC hour (the hour of each event's `occurred_at`), kept by a
 * statement-level trigger on `message_events` (migration CreateAnalyticsRollups). Analytics reads the hours at the
 * ends of a window that are not whole days.
 */
@Entity('email_stats_hourly')
export class EmailStatsHourly extends EmailStatsColumns {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The hour's start. */
  @PrimaryColumn({ type: 'timestamptz' })
  hour: Date;
}
