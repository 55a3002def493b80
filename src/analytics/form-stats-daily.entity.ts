import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';
import { Form } from '../forms/form.entity';

/** The same counts as FormStatsHourly per UTC day, kept by the same trigger in the same statement (after the hours). */
@Entity('form_stats_daily')
@Index('IX_form_stats_daily_form', ['formId'])
export class FormStatsDaily {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The UTC date. */
  @PrimaryColumn({ type: 'date' })
  day: string;

  @PrimaryColumn({ type: 'varchar', length: 40 })
  formId: string;

  @ManyToOne(() => Form, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: Form;

  @Column({ type: 'bigint', default: 0 })
  submissions: string;

  @Column({ type: 'bigint', default: 0 })
  spam: string;
}
