import { Injectable } from '@nestjs/common';
import type { MessageWithEvents } from '../../outbox/acceptance.repository';
import { ComposedEmail, OutboxService } from '../../outbox/outbox.service';
import type { SuppressionEntry } from '../../suppression/suppression-entry.entity';
import { SuppressionService } from '../../suppression/suppression.service';
import type { HeldNotificationRecipient } from '../form-submission.entity';

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
    // The entries are read only when a recipient was suppressed: a rare second query.
    const held = suppressed.length ? (await this.suppression.entriesAmong(accountId, suppressed)).map(heldRecipientOf) : [];
    return { message, held };
  }
}

export function heldRecipientOf(entry: SuppressionEntry): HeldNotificationRecipient {
  return { email: entry.email, reason: entry.reason, since: entry.createdAt.toISOString(), source: entry.source };
}

/** The `form.notification_failed` event of a recipient held at acceptance, as an event_outbox row. */
export function heldNotificationEvent(
  s: { accountId: string; formId: string; formName: string; submissionId: string },
  held: HeldNotificationRecipient,
  at: Date,
): { table: string; values: Record<string, unknown> } {
  const source = held.source ? `, ${held.source}` : '';
  const payload = {
    type: 'form.notification_failed',
    formId: s.formId,
    formName: s.formName,
    submissionId: s.submissionId,
    reason: 'suppressed',
    recipient: held.email,
    messageId: null,
    detail: `recipient ${held.email} suppressed since ${held.since} (${held.reason}${source}): sent once the suppression is lifted`,
    timestamp: at.toISOString(),
  };
  return { table: 'event_outbox', values: { account_id: s.accountId, type: 'form.notification_failed', payload: JSON.stringify(payload) } };
}
