import { carriesUnsubscribe, type TrackedMessage } from '../tracking/tracked-content';
import type { RecipientAnswer } from './smtp-outcome';
import { ProviderFailure, type TransportResult } from './transport/mail-transport';

/** One SMTP transaction of an attempt: its recipients, and the recipient whose own unsubscribe links its copy carries. */
export interface RecipientCopy {
  recipients: string[];
  /** Null: the copy is the same for all its recipients. */
  unsubscribeFor: string | null;
}

/**
 * The transactions an attempt sends (issue 35). A message that carries unsubscribe links goes to each recipient in a
 * transaction of its own, each copy with that recipient's List-Unsubscribe (same Message-ID): a mailbox provider's
 * one-click POST then names its recipient, and no recipient can unsubscribe another. Any other message is one
 * transaction to all its pending recipients; so is forwarded mail, sent as it was received.
 */
export function recipientCopies(
  message: Pick<TrackedMessage, 'tracking' | 'listId'> & { inboundMessageId: string | null },
  recipients: string[],
): RecipientCopy[] {
  if (message.inboundMessageId === null && carriesUnsubscribe(message)) {
    return recipients.map((recipient) => ({ recipients: [recipient], unsubscribeFor: recipient }));
  }
  return [{ recipients, unsubscribeFor: null }];
}

/**
 * Sends the copies one after the other and answers as one transaction to all their recipients would. A copy that
 * fails as a whole (a ProviderFailure, or an error of ours composing it) before any copy was answered rejects as that
 * one transaction would: nothing was sent. After some copies were answered, the failed copy's recipients and those of
 * the copies not tried are answered as temporarily refused (4xx: pending, retried; never bounced or suppressed for it),
 * so that the recipients who got their copy are recorded and not sent it again; `lateFailure` hears of the error.
 */
export async function sendCopies(
  copies: RecipientCopy[],
  send: (copy: RecipientCopy, index: number) => Promise<TransportResult>,
  lateFailure: (err: Error) => void = () => undefined,
): Promise<TransportResult> {
  const total: TransportResult = { accepted: [], rejected: [], response: '' };
  for (const [index, copy] of copies.entries()) {
    try {
      const result = await send(copy, index);
      total.accepted.push(...result.accepted);
      total.rejected.push(...result.rejected);
      if (result.accepted.length > 0 || !total.response) total.response = result.response;
    } catch (err) {
      if (index === 0) throw err;
      lateFailure(err as Error);
      // An error of ours may hold internals: only the provider's answer is shown in the message's events.
      const reason = err instanceof ProviderFailure ? err.description.replace(/\s+/g, ' ').slice(0, 300) : 'internal error';
      const untried = copies.slice(index).flatMap((c) => c.recipients);
      total.rejected.push(...untried.map((recipient) => notSentNow(recipient, reason)));
      return total;
    }
  }
  return total;
}

function notSentNow(recipient: string, reason: string): RecipientAnswer {
  return { recipient, responseCode: 451, response: `451 4.3.0 not sent in this attempt, the copies were stopped by a failure: ${reason}` };
}
