import { Injectable, Logger } from '@nestjs/common';
import { normalizeEmailAddress } from '../common/email-address';
import { AppException } from '../common/errors/app.exception';
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

/** Who an unsubscribe link is for, to show on its page. */
export interface UnsubscribeTarget {
  /** The message's only recipient; null when it went to several and the person must say which address. */
  email: string | null;
  from: string;
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
    const message = await this.unsubscribeMessage(token);
    return { email: onlyRecipient(message), from: message.fromAddress };
  }

  /**
   * Unsubscribes a recipient of the message: a suppression entry `unsubscribed` (source: the message), the
   * list's subscriber marked unsubscribed for a list send, and one `unsubscribed` event; a repeat changes
   * nothing. A message to several addresses needs `email`, one of them (400 otherwise).
   */
  async unsubscribe(token: string, email: string | undefined): Promise<{ email: string; from: string }> {
    const message = await this.unsubscribeMessage(token);
    const recipient = this.chooseRecipient(message, email);
    await this.suppression.add(message.accountId, recipient, 'unsubscribed', message.id);
    if (message.listId) await this.lists.markUnsubscribed(message.accountId, message.listId, recipient);
    await this.record(message.id, { type: 'unsubscribed', recipient, occurredAt: new Date() });
    return { email: recipient, from: message.fromAddress };
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

  private async unsubscribeMessage(token: string): Promise<TrackedMessageRecord> {
    const target = this.tokens.verify('u', token);
    const message = target && (await this.repository.findMessage(target.messageId));
    if (!message) throw AppException.notFound('Unsubscribe link');
    return message;
  }

  private chooseRecipient(message: TrackedMessageRecord, email: string | undefined): string {
    const only = onlyRecipient(message);
    if (email === undefined) {
      if (only) return only;
      throw AppException.invalidField('email', 'this message went to several addresses: say which one to unsubscribe');
    }
    const wanted = normalizeEmailAddress(email);
    const recipient = message.recipients.find((r) => r.toLowerCase() === wanted);
    if (!recipient) throw AppException.invalidField('email', 'is not an address this message was sent to');
    return recipient;
  }
}

/** The recipient an open or click is about: list and batch sends have one; with several nobody can tell. */
function onlyRecipient(message: TrackedMessageRecord): string | null {
  return message.recipients.length === 1 ? message.recipients[0] : null;
}
