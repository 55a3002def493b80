import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';

/** The same counts as ForwardingStatsHourly per UTC day, kept by the same trigger in the same statement (after the hours). */
@Entity('forwarding_stats_daily')
export class ForwardingStatsDaily {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The UTC date. */
  @PrimaryColumn({ type: 'date' })
  day: string;

  @PrimaryColumn({ type: 'varchar', length: 253 })
  domain: string;

  @Column({ type: 'bigint', default: 0 })
  received: string;

  @Column({ type: 'bigint', default: 0 })
  recipients: string;
}
