import { normalizeEmailAddress } from '../../common/email-address';
import type { MessageStatus } from '../../outbox/message.entity';
import type { SuppressionEntry } from '../../suppression/suppression-entry.entity';
import type { FormSubmission, HeldNotificationRecipient } from '../form-submission.entity';

/** What became of a submission's notification to the form's owner. */
export const NOTIFICATION_STATUSES = ['none', 'not_sent', 'held', 'queued', 'sent', 'delivered', 'bounced', 'failed'] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

/** A notification message as the listing reads it: its status and its last bounce or failure. */
export interface NotificationMessage {
  id: string;
  status: MessageStatus;
  failure: { type: 'bounced' | 'failed'; recipient: string | null; detail: string | null } | null;
}

export interface SubmissionNotification {
  status: NotificationStatus;
  /** For people: why nothing was sent, or what went wrong; null when all is well. */
  detail: string | null;
  /** The notification messages (also in messageIds). */
  messageIds: string[];
  /** Recipients suppressed when it was to be sent: they get it once the suppression is lifted. */
  heldRecipients: HeldNotificationRecipient[];
}

type NotifiedSubmission = Pick<FormSubmission, 'status' | 'spamReason' | 'messageIds' | 'notificationMessageIds' | 'notificationHeld'>;

/** The notification messages of a submission; one stored before they were told apart has its first message. */
export function notificationMessageIdsOf(s: Pick<FormSubmission, 'messageIds' | 'notificationMessageIds'>): string[] {
  return s.notificationMessageIds ?? s.messageIds.slice(0, 1);
}

/**
 * The reason of a recipient held though its suppression entry was gone when it was held (taken off the list between
 * the check that found it suppressed and the hold): held all the same, so the workers' sweep sends it; no webhook event.
 */
export const LIFTED = 'lifted';

/** A notification recipient held for its suppression entry. */
export function heldRecipientOf(entry: Pick<SuppressionEntry, 'email' | 'reason' | 'createdAt' | 'source'>): HeldNotificationRecipient {
  return { email: entry.email, reason: entry.reason, since: entry.createdAt.toISOString(), source: entry.source };
}

/** The held recipients of suppressed addresses: by their entries, LIFTED for one whose entry is gone already. */
export function heldRecipientsOf(suppressed: string[], entries: SuppressionEntry[], now: Date): HeldNotificationRecipient[] {
  const byEmail = new Map(entries.map((entry) => [entry.email, entry]));
  return [...new Set(suppressed.map(normalizeEmailAddress))].map((email) => {
    const entry = byEmail.get(email);
    return entry ? heldRecipientOf(entry) : { email, reason: LIFTED, since: now.toISOString(), source: null };
  });
}

/** The notification of a stored submission, from its held recipients and its messages (by id). */
export function notificationOf(s: NotifiedSubmission, messages: ReadonlyMap<string, NotificationMessage>): SubmissionNotification {
  if (s.status === 'spam') return none(`no notification: spam (${s.spamReason ?? 'blocked'})`);
  if (s.status === 'held') return none('no notification yet: the instant form waits for its recipient to confirm it');
  const messageIds = notificationMessageIdsOf(s);
  const heldRecipients = s.notificationHeld ?? [];
  if (heldRecipients.length > 0) {
    return { status: 'held', detail: heldRecipients.map(heldDetail).join('; '), messageIds, heldRecipients };
  }
  const found = messageIds.map((id) => messages.get(id)).filter((m): m is NotificationMessage => m !== undefined);
  const failed = found.find((m) => m.failure);
  if (failed?.failure) {
    const { type, recipient, detail } = failed.failure;
    const whom = recipient ? ` to ${recipient}` : '';
    return {
      status: type,
      detail: `notification${whom} ${type} (message ${failed.id})${detail ? `: ${detail}` : ''}`,
      messageIds,
      heldRecipients,
    };
  }
  // A message failed with no failure of its own had only suppressed recipients: they were held, and sent to when released.
  const counted = found.filter((m) => m.status !== 'failed');
  if (counted.length === 0) {
    // Removed by retention: what became of it is not known.
    if (messageIds.length && !found.length) return { ...none('the notification message is no longer stored'), messageIds };
    // An accepted submission has notification recipients: nobody sent to and nobody held to be sent later is a lost notification.
    const why = found.length
      ? 'every recipient was suppressed, and none is held to be sent later'
      : 'no notification message and no recipient held';
    return { status: 'not_sent', detail: `notification not sent: ${why}`, messageIds, heldRecipients };
  }
  return { status: overallStatus(counted.map((m) => m.status)), detail: null, messageIds, heldRecipients };
}

function none(detail: string): SubmissionNotification {
  return { status: 'none', detail, messageIds: [], heldRecipients: [] };
}

export function heldDetail(held: HeldNotificationRecipient): string {
  if (held.reason === LIFTED) {
    return `notification not sent yet: recipient ${held.email} was taken off the suppression list as it was sent (${held.since}); it is sent shortly`;
  }
  const source = held.source?.startsWith('msg_') ? `, message ${held.source}` : held.source ? `, by ${held.source}` : '';
  return (
    `notification not sent: recipient ${held.email} suppressed since ${held.since} (${held.reason}${source}); ` +
    'it is sent once the address is taken off the suppression list'
  );
}

/** Still on its way while any message is; sent while any is only sent; delivered when all are. */
function overallStatus(statuses: MessageStatus[]): NotificationStatus {
  const each = statuses.map((status): NotificationStatus => {
    if (status === 'sent' || status === 'delivered' || status === 'bounced') return status;
    return status === 'cancelled' ? 'failed' : 'queued';
  });
  for (const status of ['failed', 'bounced', 'queued', 'sent'] as const) if (each.includes(status)) return status;
  return 'delivered';
}
