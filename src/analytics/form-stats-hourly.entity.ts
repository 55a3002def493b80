import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';
import { Form } from '../forms/form.entity';

/**
 * Submissions of one form in one UTC hour (of their `created_at`), kept by a statement-level trigger on
 * `form_submissions` (migration CreateAnalyticsRollups). A deleted form takes its rows with it, as it takes its
 * submissions.
 */
@Entity('form_stats_hourly')
// The cascade from forms looks rows up by form.
@Index('IX_form_stats_hourly_form', ['formId'])
export class FormStatsHourly {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The hour's start. */
  @PrimaryColumn({ type: 'timestamptz' })
  hour: Date;

  @PrimaryColumn({ type: 'varchar', length: 40 })
  formId: string;

  @ManyToOne(() => Form, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: Form;

  /** Submissions stored `accepted` or `held` (an instant form's, waiting for its confirmation). */
  @Column({ type: 'bigint', default: 0 })
  submissions: string;

  /** Submissions blocked as spam (honeypot, content filter: D-27). */
  @Column({ type: 'bigint', default: 0 })
  spam: string;
}
