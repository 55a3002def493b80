import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';

/**
 * Messages the inbound SMTP server took for one forwarding domain in one UTC hour (of their `created_at`), kept by
 * a statement-level trigger on `inbound_messages` (migration CreateForwardingStats). No key to `domains`: a
 * domain deleted later keeps the mail it received, as its messages keep their events.
 */
@Entity('forwarding_stats_hourly')
export class ForwardingStatsHourly {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The hour's start. */
  @PrimaryColumn({ type: 'timestamptz' })
  hour: Date;

  /** The forwarding domain (lower-cased), as `inbound_messages.domain`. */
  @PrimaryColumn({ type: 'varchar', length: 253 })
  domain: string;

  /** `inbound_messages` rows: a message received for this domain (one SMTP transaction for two domains is two). */
  @Column({ type: 'bigint', default: 0 })
  received: string;

  /** Their envelope recipients on the domain (RCPT TO), summed. */
  @Column({ type: 'bigint', default: 0 })
  recipients: string;
}
