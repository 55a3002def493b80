import type { AddParam } from '../outbox/acceptance.repository';
import type { Message } from '../outbox/message.entity';
import type { RecipientAnswer } from './smtp-outcome';

/** A destination of a forwarded message that will not get it, as forward_failures keeps it. */
export interface ForwardFailureInput {
  recipient: string;
  /** RFC 3463 status code. */
  status: string;
  /** RFC 3464 Diagnostic-Code, with its type. */
  diagnostic: string;
}

/** RFC 3463 X.4.7: delivery time expired. */
export const EXPIRED_STATUS = '4.4.7';
/** What the sender reads when the retries ran out without an answer from the next hop (a failure of ours, in the log). */
export const EXPIRED_DIAGNOSTIC = 'X-Mailroom; delivery time expired';
/** RFC 3463 X.3.0: a mail system failure, permanent: Mailroom will not send the message at all. */
const NOT_SENT_STATUS = '5.3.0';
const NOT_SENT_DIAGNOSTIC = 'X-Mailroom; the message could not be forwarded';
/** RFC 3463 X.2.1: mailbox disabled — the destination went on the suppression list after the message was taken. */
const SUPPRESSED_STATUS = '5.2.1';
const SUPPRESSED_DIAGNOSTIC = 'X-Mailroom; mailbox disabled, not accepting messages';

const ENHANCED_CODE = /\b([245])\.(\d{1,3})\.(\d{1,3})\b/;

/**
 * Whether failures of a message owe its sender a notification: forwarded mail with a sender. A bounce relayed back
 * (MAIL FROM:<>, as every message forwarded from a null sender) never gets one, and mail Mailroom composes (its own
 * notifications among it) has no inbound message: no notification is ever about a notification.
 */
export function reportsFailures(message: Pick<Message, 'inboundMessageId' | 'envelopeFrom'>): boolean {
  return Boolean(message.inboundMessageId) && Boolean(message.envelopeFrom);
}

/** A recipient the next hop refused for good (5xx). */
export function refused(answer: RecipientAnswer): ForwardFailureInput {
  return { recipient: answer.recipient, status: statusOf(answer.response, '5', '5.0.0'), diagnostic: `smtp; ${oneLine(answer.response)}` };
}

/** A recipient still refused for now (4xx) at the last attempt: the reply's own code tells why, else 4.4.7. */
export function expired(answer: RecipientAnswer): ForwardFailureInput {
  return {
    recipient: answer.recipient,
    status: statusOf(answer.response, '4', EXPIRED_STATUS),
    diagnostic: `smtp; ${oneLine(answer.response)}`,
  };
}

/** Recipients the next hop said nothing about (it failed as a whole) when the retries ran out. */
export function expiredUnanswered(recipients: readonly string[]): ForwardFailureInput[] {
  return recipients.map((recipient) => ({ recipient, status: EXPIRED_STATUS, diagnostic: EXPIRED_DIAGNOSTIC }));
}

/** Recipients put on the suppression list while the message waited: it is not sent to them. */
export function suppressedDestinations(recipients: readonly string[]): ForwardFailureInput[] {
  return recipients.map((recipient) => ({ recipient, status: SUPPRESSED_STATUS, diagnostic: SUPPRESSED_DIAGNOSTIC }));
}

/** Recipients of a message Mailroom will not send at all (its domain no longer verified, say). */
export function notSent(recipients: readonly string[]): ForwardFailureInput[] {
  return recipients.map((recipient) => ({ recipient, status: NOT_SENT_STATUS, diagnostic: NOT_SENT_DIAGNOSTIC }));
}

/**
 * The statement recording the failures, for the transaction that moves the message (DeliveryStore.transition's
 * companion): a destination recorded already (the job ran twice) is left as it was.
 */
export function recordFailures(messageId: string, failures: readonly ForwardFailureInput[]): (param: AddParam) => string {
  return (param) => {
    const rows = failures.map((f) => `(${param(messageId)}, ${param(f.recipient)}, ${param(f.status)}, ${param(f.diagnostic)})`);
    return `INSERT INTO forward_failures (message_id, recipient, status, diagnostic) VALUES ${rows.join(', ')} ON CONFLICT DO NOTHING`;
  };
}

/**
 * For moves to `failed` written in SQL alone (an error of ours on the last attempt, the sweeper giving up): the data-
 * modifying CTE recording every pending recipient of a forwarded message with a sender as expired. `moved` names a CTE
 * returning id, inbound_message_id, envelope_from and pending_recipients; `when` a boolean SQL expression.
 */
export function expiredPendingCte(moved: string, when = 'true'): string {
  return `INSERT INTO forward_failures (message_id, recipient, status, diagnostic)
     SELECT ${moved}.id, r.recipient, '${EXPIRED_STATUS}', '${EXPIRED_DIAGNOSTIC}'
     FROM ${moved} CROSS JOIN jsonb_array_elements_text(${moved}.pending_recipients) AS r(recipient)
     WHERE (${when}) AND ${moved}.inbound_message_id IS NOT NULL AND ${moved}.envelope_from <> ''
     ON CONFLICT DO NOTHING`;
}

/** expiredPendingCte for one message, as a companion statement of DeliveryStore.transition. */
export function recordExpiredPending(messageId: string): (param: AddParam) => string {
  return (param) =>
    `WITH moved AS (SELECT id, inbound_message_id, envelope_from, pending_recipients FROM messages WHERE id = ${param(messageId)}) ` +
    expiredPendingCte('moved');
}

/** The reply's enhanced code when it is of the reply's class, else the fallback (`5.0.0`: a 550 that says no more). */
function statusOf(response: string, replyClass: '4' | '5', fallback: string): string {
  const match = ENHANCED_CODE.exec(response);
  return match && match[1] === replyClass ? match[0] : fallback;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 500);
}
