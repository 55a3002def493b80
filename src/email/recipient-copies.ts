import type { MessageContent } from '../outbox/message.entity';
import { carriesUnsubscribe, type TrackedMessage } from '../tracking/tracked-content';
import type { RecipientAnswer } from './smtp-outcome';
import { ProviderFailure, type TransportResult } from './transport/mail-transport';

/** One SMTP transaction of an attempt: its recipients, and the recipient whose own unsubscribe links its copy carries. */
export interface RecipientCopy {
  recipients: string[];
  /** Null: the copy is the same for all its recipients. */
  unsubscribeFor: string | null;
}

/** A message's content for all its recipients, and the copy of it for one recipient (TrackedContentService.contentFor). */
export interface CopiesOf {
  shared: MessageContent;
  own: (recipient: string) => MessageContent;
}

/**
 * The transactions an attempt sends (issue 35). A message that carries unsubscribe links goes to each recipient in a
 * transaction of its own when the copies differ, each copy with that recipient's links (same Message-ID): a mailbox
 * provider's one-click POST then names its recipient, and no recipient can unsubscribe another. They differ when
 * Mailroom added List-Unsubscribe or the subject, text or HTML has the link (`{{unsubscribeUrl}}`); a sender's own
 * List-Unsubscribe and no link in the body is one transaction. So is any other message, and forwarded mail or a DSN
 * (`content` null: sent as they are).
 */
export function recipientCopies(
  message: Pick<TrackedMessage, 'tracking' | 'listId'>,
  recipients: string[],
  content: CopiesOf | null,
): RecipientCopy[] {
  if (content && recipients.length > 0 && carriesUnsubscribe(message) && differs(content.shared, content.own(recipients[0]))) {
    return recipients.map((recipient) => ({ recipients: [recipient], unsubscribeFor: recipient }));
  }
  return [{ recipients, unsubscribeFor: null }];
}

/** Whether a recipient's copy is not the shared content: its own link replaced the message's somewhere. */
function differs(shared: MessageContent, own: MessageContent): boolean {
  return (
    own.subject !== shared.subject ||
    own.text !== shared.text ||
    own.html !== shared.html ||
    own.headers['List-Unsubscribe'] !== shared.headers['List-Unsubscribe']
  );
}

/** The copies' answers as one transaction's, and the failure that stopped them after some were sent. */
export interface CopiesResult extends TransportResult {
  /** A later copy failed as a whole (ProviderFailure): the provider's answer, which shows it failing. */
  lateFailure?: string;
}

export interface CopiesProgress {
  /**
   * After each copy some recipient accepted, while copies remain: the answers so far, with the recipients of the copies
   * not yet sent as temporarily refused (451 4.3.0). Kept (DeliveredOutcomes), they let an attempt after a worker died
   * between copies record what was sent and keep the others pending instead of sending every copy again. Must not
   * reject: the copies already sent could then be sent again.
   */
  onCopy?: (sofar: TransportResult) => Promise<void>;
  /** Hears of the error that stopped the copies after some were answered. */
  onLateError?: (err: Error) => void;
}

/**
 * Sends the copies one after the other and answers as one transaction to all their recipients would. A copy that
 * fails as a whole (a ProviderFailure, or an error of ours composing it) before any copy was answered rejects as that
 * one transaction would: nothing was sent. After some copies were answered, the failed copy's recipients and those of
 * the copies not tried are answered as temporarily refused (4xx: pending, retried; never bounced or suppressed for it),
 * so that the recipients who got their copy are recorded and not sent it again; a ProviderFailure is `lateFailure`.
 */
export async function sendCopies(
  copies: RecipientCopy[],
  send: (copy: RecipientCopy, index: number) => Promise<TransportResult>,
  progress: CopiesProgress = {},
): Promise<CopiesResult> {
  const total: CopiesResult = { accepted: [], rejected: [], response: '' };
  for (const [index, copy] of copies.entries()) {
    let result: TransportResult;
    try {
      result = await send(copy, index);
    } catch (err) {
      if (index === 0) throw err;
      progress.onLateError?.(err as Error);
      // An error of ours may hold internals: only the provider's answer is shown in the message's events.
      if (err instanceof ProviderFailure) total.lateFailure = err.description;
      const reason = err instanceof ProviderFailure ? err.description.replace(/\s+/g, ' ').slice(0, 300) : 'internal error';
      total.rejected.push(...notSent(copies.slice(index), `the copies were stopped by a failure: ${reason}`));
      return total;
    }
    total.accepted.push(...result.accepted);
    total.rejected.push(...result.rejected);
    if (result.accepted.length > 0 || !total.response) total.response = result.response;
    if (progress.onCopy && result.accepted.length > 0 && index < copies.length - 1) {
      const untried = notSent(copies.slice(index + 1), 'it stopped before this copy was sent');
      await progress.onCopy({ accepted: [...total.accepted], rejected: [...total.rejected, ...untried], response: total.response });
    }
  }
  return total;
}

function notSent(copies: RecipientCopy[], why: string): RecipientAnswer[] {
  return copies
    .flatMap((c) => c.recipients)
    .map((recipient) => ({ recipient, responseCode: 451, response: `451 4.3.0 not sent in this attempt, ${why}` }));
}
