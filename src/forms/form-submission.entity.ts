import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import { Form } from './form.entity';
import type { FormLanguage } from './i18n/language';

/** accepted: its emails are queued; spam: blocked (D-27), nothing sent; held: waits for an instant form's confirmation. */
export type SubmissionStatus = 'accepted' | 'spam' | 'held';
export const SUBMISSION_STATUSES: readonly SubmissionStatus[] = ['accepted', 'spam', 'held'];

/** Submitted values by field name; a repeated name (checkboxes) keeps every value. */
export type SubmittedFields = Record<string, string | string[]>;

/** A notification recipient (the owner's own address) that was on the suppression list: its notification waits for the lift. */
export interface HeldNotificationRecipient {
  email: string;
  /** The suppression entry's reason and time, and what put it there (a message id, "api", …). */
  reason: string;
  since: string;
  source: string | null;
}

/**
 * What a submission's emails take from its post's control fields, parsed and checked (D-25), so that emails made
 * later say what the post asked for.
 */
export interface NotificationOptions {
  /** `_subject`, at most 998 characters. */
  subject?: string;
  /** `_replyto`, a valid address. */
  replyTo?: string;
  /** `_format=plain`. */
  format?: 'plain';
  /** The owner's notification's language: from `_language` only. */
  language?: FormLanguage;
  /** The visitor's acknowledgment's language: `_language`, else the browser's Accept-Language. */
  visitorLanguage?: FormLanguage;
  /** The addresses of `_cc` that the form's ccAllowed listed when it came (checked against it again when sent). */
  cc?: string[];
}

export interface SubmittedFile {
  field: string;
  filename: string;
  contentType: string;
  size: number;
}

/** One post to a form, as received: stored before the answer, whatever happens to it (D-16). */
@Entity('form_submissions')
@Index('IX_form_submissions_form_created', ['formId', 'createdAt', 'id'])
@Index('IX_form_submissions_notification_held', ['accountId', 'createdAt'], { where: '"notification_held" IS NOT NULL' })
@Index('IX_form_submissions_held', ['formId', 'createdAt', 'id'], { where: `"status" = 'held'` })
// A GIN index (jsonb_path_ops) on notification_message_ids, made by its migration: TypeORM cannot describe it.
@Index('IX_form_submissions_notification_messages', { synchronize: false })
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

  /** Every submitted field except control fields (`_…`), in the order posted (`json` keeps it, `jsonb` would sort). */
  @Column({ type: 'json' })
  fields: SubmittedFields;

  @Column({ type: 'jsonb', default: [] })
  files: SubmittedFile[];

  /** The uploads (base64) of a held submission, until its emails are made; null otherwise. */
  @Column({ type: 'jsonb', nullable: true })
  heldAttachments: { filename: string; content: string; contentType: string }[] | null;

  /** The notification and acknowledgment messages (`/email/status/{id}`). */
  @Column({ type: 'jsonb', default: [] })
  messageIds: string[];

  /** Which of messageIds are notifications to the owner; null for submissions stored before it was kept (the first). */
  @Column({ type: 'jsonb', nullable: true })
  notificationMessageIds: string[] | null;

  /** Notification recipients left out because they were suppressed; sent to once the suppression is lifted. */
  @Column({ type: 'jsonb', nullable: true })
  notificationHeld: HeldNotificationRecipient[] | null;

  /** What its emails take from the post's control fields; null for submissions stored before they were kept. */
  @Column({ type: 'jsonb', nullable: true })
  notificationOptions: NotificationOptions | null;

  @Column({ type: 'varchar', length: 45, nullable: true })
  ip: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  userAgent: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  origin: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
