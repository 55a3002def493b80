import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import { Form } from './form.entity';

/** accepted: its emails are queued; spam: blocked (D-27), nothing sent; held: waits for an instant form's confirmation. */
export type SubmissionStatus = 'accepted' | 'spam' | 'held';
export const SUBMISSION_STATUSES: readonly SubmissionStatus[] = ['accepted', 'spam', 'held'];

/** Submitted values by field name; a repeated name (checkboxes) keeps every value. */
export type SubmittedFields = Record<string, string | string[]>;

export interface SubmittedFile {
  field: string;
  filename: string;
  contentType: string;
  size: number;
}

/** One post to a form, as received: stored before the answer, whatever happens to it (D-16). */
@Entity('form_submissions')
@Index('IX_form_submissions_form_created', ['formId', 'createdAt', 'id'])
export class FormSubmission extends AccountOwned {
  @Column({ type: 'varchar', length: 40 })
  formId: string;

  @ManyToOne(() => Form, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: Form;

  @Column({ type: 'varchar', length: 10 })
  status: SubmissionStatus;

  /** Why a spam submission was blocked. */
  @Column({ type: 'varchar', length: 200, nullable: true })
  spamReason: string | null;

  /** Every submitted field except control fields (`_…`). */
  @Column({ type: 'jsonb' })
  fields: SubmittedFields;

  @Column({ type: 'jsonb', default: [] })
  files: SubmittedFile[];

  /** The uploads (base64) of a held submission, until its emails are made; null otherwise. */
  @Column({ type: 'jsonb', nullable: true })
  heldAttachments: { filename: string; content: string; contentType: string }[] | null;

  /** The notification and acknowledgment messages (`/email/status/{id}`). */
  @Column({ type: 'jsonb', default: [] })
  messageIds: string[];

  @Column({ type: 'varchar', length: 45, nullable: true })
  ip: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  userAgent: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  origin: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
