import { Injectable } from '@nestjs/common';
import type { CompanionStatement, MessageWithEvents } from '../../outbox/acceptance.repository';
import { ComposedEmail, OutboxService } from '../../outbox/outbox.service';
import { SuppressionService } from '../../suppression/suppression.service';
import type { HeldNotificationRecipient } from '../form-submission.entity';
import { heldRecipientsOf, LIFTED } from './notification-state';

/** A notification to the form's owner: the message to its unsuppressed recipients (null if none), and the held ones. */
export interface OwnerNotification {
  message: MessageWithEvents | null;
  held: HeldNotificationRecipient[];
}

/**
 * Notification recipients are the owner's own addresses: one on the suppression list is held on the submission, with
 * why, instead of vanishing (it gets the notification once the suppression is lifted).
 */
@Injectable()
export class OwnerNotifications {
  constructor(
    private readonly outbox: OutboxService,
    private readonly suppression: SuppressionService,
  ) {}

  async compose(accountId: string, email: ComposedEmail): Promise<OwnerNotification> {
    const message = await this.outbox.compose(accountId, email);
    const suppressed = message ? message.message.suppressedRecipients : [...email.to, ...(email.cc ?? [])];
    if (suppressed.length === 0) return { message, held: [] };
    // Read only when a recipient was suppressed (a rare second query); one taken off the list since is held all the same.
    const entries = await this.suppression.entriesAmong(accountId, suppressed);
    return { message, held: heldRecipientsOf(suppressed, entries, new Date()) };
  }
}

/**
 * The `form.notification_failed` event of a recipient held at acceptance, written as the trigger of migration
 * AddSubmissionNotificationState writes those of delivery (its SQL functions: one payload, one subscription rule);
 * none for a recipient whose suppression was lifted already.
 */
export function heldNotificationEvent(
  s: { accountId: string; formId: string; formName: string; submissionId: string },
  held: HeldNotificationRecipient,
  at: Date,
): CompanionStatement | null {
  if (held.reason === LIFTED) return null;
  return (p) =>
    `INSERT INTO event_outbox (account_id, type, payload) ` +
    `SELECT ${p(s.accountId)}::text, 'form.notification_failed', form_notification_failed_payload(` +
    `${p(s.formId)}::text, ${p(s.formName)}::text, ${p(s.submissionId)}::text, 'suppressed', ${p(held.email)}::text, NULL, ` +
    `form_notification_held_detail(${p(held.email)}::text, ${p(held.reason)}::text, ${p(held.since)}::text, ${p(held.source)}::text), ` +
    `${p(at)}::timestamptz) ` +
    `WHERE form_notification_subscribed(${p(s.accountId)}::text)`;
}
