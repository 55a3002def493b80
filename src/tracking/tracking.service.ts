import { Injectable, Logger } from '@nestjs/common';
import { normalizeEmailAddress } from '../common/email-address';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import type { NewEvent } from '../outbox/message-event.entity';
import { LateEventsRepository } from '../outbox/late-events.repository';
import { ListsService } from '../lists/lists.service';
import { SuppressionService } from '../suppression/suppression.service';
import { Hit, machineReason } from './machine-hits';
import { MessageLinksRepository } from './message-links.repository';
import { RepeatedOpens } from './repeated-opens';
import { TrackedContentService } from './tracked-content.service';
import { TrackedMessageRecord, TrackingRepository } from './tracking.repository';
import { TrackingTokens } from './tracking-tokens';
import { UnsubscribeConfirmations } from './unsubscribe-confirmations';

/** Who an unsubscribe link is for and what it takes them off, to show on its page. */
export interface UnsubscribeTarget {
  /** The recipient the link names (or the message's only one); null when the person must say which address. */
  email: string | null;
  from: string;
  /** A list send's list name: its unsubscribe takes the address off that list only. Null for any other message. */
  list: string | null;
}

/**
 * What an unsubscribe did, as its answer shows it. `confirmationSent`: the address was given for a link naming nobody;
 * nothing was unsubscribed, and the answer is the same whether or not it was a recipient (mailed its own link if it was).
 */
export interface UnsubscribeResult {
  email: string;
  from: string;
  list: string | null;
  confirmationSent: boolean;
}

/**
 * Opens, clicks and unsubscribes (D-22). Every hit is recorded as an event of its message (the webhooks
 * follow from the events); hits made by machines are recorded too, flagged `machine`.
 */
@Injectable()
export class TrackingService {
  private readonly logger = new Logger(TrackingService.name);

  constructor(
    private readonly tokens: TrackingTokens,
    private readonly repository: TrackingRepository,
    private readonly events: LateEventsRepository,
    private readonly suppression: SuppressionService,
    private readonly lists: ListsService,
    private readonly links: MessageLinksRepository,
    private readonly trackedContent: TrackedContentService,
    private readonly repeatedOpens: RepeatedOpens,
    private readonly confirmations: UnsubscribeConfirmations,
  ) {}

  /**
   * Records an open; 404 for a token that is not an open link of a message tracked for opens. A repeat by the same
   * client within TRACKING_REPEAT_OPEN_WINDOW_MS records nothing (RepeatedOpens).
   */
  async open(token: string, hit: Hit): Promise<void> {
    const target = this.tokens.verify('o', token);
    const message = target && (await this.repository.findMessage(target.messageId));
    if (!message?.tracking?.opens) throw AppException.notFound('Tracking link');
    const machine = machineReason(hit, message.sentAt) !== null;
    const claim = await this.repeatedOpens.claim(message.id, hit, machine);
    if (!claim) return;
    try {
      await this.record(message.id, { type: 'opened', recipient: onlyRecipient(message), machine, occurredAt: hit.at });
    } catch (err) {
      await claim.giveBack();
      throw err;
    }
  }

  /**
   * Records a click and gives the URL to send the person to: link i of the message as it was sent (recorded then),
   * so a click never leads anywhere its message did not. 404 for anything else.
   */
  async click(token: string, hit: Hit): Promise<string> {
    const target = this.tokens.verify('c', token);
    const message = target && (await this.repository.findClick(target.messageId, target.link));
    if (!target || !message?.tracking?.clicks) throw AppException.notFound('Tracking link');
    const url = message.link.recorded ? message.link.url : await this.unrecordedLink(message.id, target.link);
    if (url === null) throw AppException.notFound('Tracking link');
    await this.record(message.id, {
      type: 'clicked',
      recipient: onlyRecipient(message),
      detail: url,
      machine: machineReason(hit, message.sentAt) !== null,
      occurredAt: hit.at,
    });
    return url;
  }

  /** What the unsubscribe page shows; 404 for an unknown link. */
  async unsubscribeTarget(token: string): Promise<UnsubscribeTarget> {
    const { message, recipient } = await this.unsubscribeLink(token);
    return { email: recipient, from: message.fromAddress, list: await this.listName(message) };
  }

  /**
   * Unsubscribes a recipient of the message (issue 35): from a list send, the list's subscriber is marked unsubscribed
   * (no suppression: other mail still reaches the address); from any other message, a suppression entry `unsubscribed`
   * (source: the message). One `unsubscribed` event either way; a repeat changes nothing.
   *
   * Who: the recipient the link names (`email` is not read: nobody unsubscribes a co-recipient), or the only recipient
   * of a message whose link names nobody (sent before links named their recipient). On such a link of a message to
   * several addresses nobody is unsubscribed: without `email`, 400; with it, the address is mailed its own link if it
   * was a recipient (UnsubscribeConfirmations, after the answer), and the answer is the same whether or not it was, so
   * that it never tells who a message went to (bcc).
   */
  async unsubscribe(token: string, email: string | undefined): Promise<UnsubscribeResult> {
    const { message, recipient } = await this.unsubscribeLink(token);
    const list = await this.listName(message);
    if (recipient !== null) {
      await this.takeOff(message, recipient);
      return { email: recipient, from: message.fromAddress, list, confirmationSent: false };
    }
    if (email === undefined) {
      throw AppException.invalidField('email', 'this message went to several addresses: say which one to unsubscribe');
    }
    const wanted = normalizeEmailAddress(email);
    this.confirmations.offer(message, wanted, list);
    return { email: wanted, from: message.fromAddress, list, confirmationSent: true };
  }

  /**
   * Link i of a message sent before links were recorded at sending: its HTML parsed (once: its links are recorded
   * for the clicks after), while the message still has its content. Null when it has no such link, or no content.
   */
  private async unrecordedLink(messageId: string, link: number): Promise<string | null> {
    const html = await this.repository.findHtml(messageId);
    if (html === null) return null;
    const urls = this.trackedContent.linksOf(messageId, html);
    await this.links
      .record(messageId, urls)
      .catch((err: Error) => this.logger.warn(`The links of ${messageId} were not recorded (the next click parses again): ${err.message}`));
    return urls[link] ?? null;
  }

  /** An event of the message; a repeated unsubscribe of an address is dropped (the webhook fires once). */
  private record(messageId: string, event: NewEvent): Promise<void> {
    return this.events.recordLateEvent({ messageId, event });
  }

  /**
   * The message of an unsubscribe link and the recipient it is for: the one its token names, else the
   * message's only recipient, else null. 404 for an unknown link, or a recipient the message does not have.
   */
  private async unsubscribeLink(token: string): Promise<{ message: TrackedMessageRecord; recipient: string | null }> {
    const target = this.tokens.verify('u', token);
    const message = target && (await this.repository.findMessage(target.messageId));
    if (!target || !message) throw AppException.notFound('Unsubscribe link');
    if (target.recipient === undefined) return { message, recipient: onlyRecipient(message) };
    const recipient = this.tokens.recipientOf(message.id, target.recipient, message.recipients);
    if (recipient === null) throw AppException.notFound('Unsubscribe link');
    return { message, recipient };
  }

  /** A list send's recipient leaves that list; anyone else's is suppressed for the account. The event is recorded once. */
  private async takeOff(message: TrackedMessageRecord, recipient: string): Promise<void> {
    if (message.listId) await this.lists.markUnsubscribed(message.accountId, message.listId, recipient);
    else await this.suppression.add(message.accountId, recipient, 'unsubscribed', message.id);
    await this.record(message.id, { type: 'unsubscribed', recipient, occurredAt: new Date() });
  }

  /** The name of a list send's list, for its pages ('' once the list is deleted); null for any other message. */
  private async listName(message: TrackedMessageRecord): Promise<string | null> {
    if (!message.listId) return null;
    try {
      return (await this.lists.get(message.accountId, message.listId)).name;
    } catch (err) {
      if (err instanceof AppException && err.code === ErrorCode.NotFound) return '';
      throw err;
    }
  }
}

/** The recipient an open or click is about: list and batch sends have one; with several nobody can tell. */
function onlyRecipient(message: TrackedMessageRecord): string | null {
  return message.recipients.length === 1 ? message.recipients[0] : null;
}
