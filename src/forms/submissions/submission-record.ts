import type { CompanionStatement, MessageWithEvents } from '../../outbox/acceptance.repository';
import { recipientCount } from '../../outbox/acceptance.repository';
import type { Metering } from '../../quotas/usage-statement';
import type { Form } from '../form.entity';
import type {
  HeldNotificationRecipient,
  NotificationOptions,
  SubmissionStatus,
  SubmittedFields,
  SubmittedFile,
} from '../form-submission.entity';
import { heldNotificationEvent } from '../notifications/owner-notifications';
import type { MailAttachment } from '../uploads/submission-uploads';
import type { AcknowledgmentClaim } from './acknowledgment-gate';
import type { PostFingerprint } from './duplicate-posts';

/** The emails of an accepted submission, and the acknowledgment's claim to give back if they are not accepted. */
export interface SubmissionEmails {
  messages: MessageWithEvents[];
  acknowledgment: AcknowledgmentClaim | null;
  /** Which of the messages is the owner's notification, and its recipients held because they are suppressed. */
  notification: { messageIds: string[]; held: HeldNotificationRecipient[] };
}

export const NO_EMAILS: SubmissionEmails = { messages: [], acknowledgment: null, notification: { messageIds: [], held: [] } };

/** What a stored submission is made of, before it is written. */
export interface NewSubmission {
  id: string;
  form: Form;
  status: SubmissionStatus;
  spamReason: string | null;
  fields: SubmittedFields;
  files: SubmittedFile[];
  heldAttachments: MailAttachment[] | null;
  /** What its emails take from the post's control fields, whenever they are made. */
  notificationOptions: NotificationOptions;
  messageIds: string[];
  notificationMessageIds: string[];
  notificationHeld: HeldNotificationRecipient[] | null;
  ip: string | null;
  userAgent: string | null;
  origin: string | null;
  createdAt: Date;
}

/**
 * What an acceptance of form mail counts (D-37): its submissions, and one email per recipient of its messages
 * (the notification's recipients and the acknowledgment's one).
 */
export function submissionMetering(accountId: string, submissions: number, messages: MessageWithEvents[]): Metering {
  return { accountId, emails: recipientCount(messages), submissions };
}

/** A stored submission, enough to make its emails later (no options: one stored before they were kept). */
export type HeldSubmission = Pick<
  NewSubmission,
  'id' | 'fields' | 'files' | 'ip' | 'userAgent' | 'origin' | 'createdAt' | 'heldAttachments'
> & { notificationOptions: NotificationOptions | null };

/** What tells a repeated post: its form, client, fields as posted and files with their bytes' hashes. */
export function postFingerprint(s: NewSubmission, stored: readonly { hash: string }[]): PostFingerprint {
  return {
    formId: s.form.id,
    ip: s.ip,
    fields: s.fields,
    files: s.files.map(({ field, filename }, i) => ({ field, filename, hash: stored[i].hash })),
  };
}

/** The submission row, and for an accepted one its `form.submission` event. */
export function submissionStatements(s: NewSubmission): CompanionStatement[] {
  const insert: CompanionStatement = {
    table: 'form_submissions',
    values: {
      id: s.id,
      account_id: s.form.accountId,
      form_id: s.form.id,
      status: s.status,
      spam_reason: s.spamReason,
      fields: JSON.stringify(s.fields),
      files: JSON.stringify(s.files),
      held_attachments: s.heldAttachments ? JSON.stringify(s.heldAttachments) : null,
      notification_options: JSON.stringify(s.notificationOptions),
      message_ids: JSON.stringify(s.messageIds),
      notification_message_ids: JSON.stringify(s.notificationMessageIds),
      notification_held: s.notificationHeld && JSON.stringify(s.notificationHeld),
      ip: s.ip,
      user_agent: s.userAgent,
      origin: s.origin,
      created_at: s.createdAt,
    },
  };
  return s.status === 'accepted' ? [insert, outboxStatement(s), ...heldNotificationEvents(s)] : [insert];
}

/** A submission not notified yet. */
export function notNotified(): Pick<NewSubmission, 'messageIds' | 'notificationMessageIds' | 'notificationHeld'> {
  return { messageIds: [], notificationMessageIds: [], notificationHeld: null };
}

/** Records on the submission what became of its notification. */
export function withNotification(s: NewSubmission, emails: SubmissionEmails): void {
  s.notificationMessageIds = emails.notification.messageIds;
  s.notificationHeld = emails.notification.held.length ? emails.notification.held : null;
}

/**
 * A `form.notification_failed` event per recipient held, if a webhook of the account subscribes to it (D-16: in the
 * statement that accepts the submission).
 */
export function heldNotificationEvents(s: NewSubmission): CompanionStatement[] {
  const about = { accountId: s.form.accountId, formId: s.form.id, formName: s.form.name, submissionId: s.id };
  return (s.notificationHeld ?? []).flatMap((held) => heldNotificationEvent(about, held, s.createdAt) ?? []);
}

export function outboxStatement(s: NewSubmission): CompanionStatement {
  const payload = {
    type: 'form.submission',
    formId: s.form.id,
    formName: s.form.name,
    submissionId: s.id,
    fields: s.fields,
    files: s.files,
    messageIds: s.messageIds,
    timestamp: s.createdAt.toISOString(),
  };
  return { table: 'event_outbox', values: { account_id: s.form.accountId, type: 'form.submission', payload: JSON.stringify(payload) } };
}

/**
 * Marks a held (instant form) or spam submission accepted with what its release made, if it is still `from` when the
 * statement commits.
 */
export function acceptedStatement(s: NewSubmission, from: 'held' | 'spam'): CompanionStatement {
  return (p) =>
    `UPDATE form_submissions SET status = 'accepted', spam_reason = NULL, held_attachments = NULL, ` +
    `message_ids = ${p(JSON.stringify(s.messageIds))}::jsonb, ` +
    `notification_message_ids = ${p(JSON.stringify(s.notificationMessageIds))}::jsonb, ` +
    `notification_held = ${p(s.notificationHeld && JSON.stringify(s.notificationHeld))}::jsonb ` +
    `WHERE id = ${p(s.id)} AND status = ${p(from)}`;
}
