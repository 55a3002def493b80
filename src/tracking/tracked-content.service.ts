import { Injectable } from '@nestjs/common';
import type { MessageContent } from '../outbox/message.entity';
import { MessageLinksRepository } from './message-links.repository';
import { recipientContent, trackableLinks, trackedContent, TrackedMessage } from './tracked-content';
import { TrackingTokens } from './tracking-tokens';

/** The content a stored message is sent with (tracked-content.ts), for the delivery worker. */
@Injectable()
export class TrackedContentService {
  constructor(
    private readonly tokens: TrackingTokens,
    private readonly links: MessageLinksRepository,
  ) {}

  /**
   * The message's tracked content, its click links recorded first: rejects when they cannot be, so that no
   * message leaves with links whose clicks could not be followed without parsing its HTML again.
   */
  async contentToSend(message: TrackedMessage): Promise<MessageContent> {
    const { content, clickLinks } = trackedContent(message, this.tokens);
    if (clickLinks.length > 0) await this.links.record(message.id, clickLinks);
    return content;
  }

  /** The copy of contentToSend's content for one recipient: its unsubscribe links that recipient's own. */
  contentFor(messageId: string, content: MessageContent, recipient: string): MessageContent {
    return recipientContent(content, messageId, this.tokens, recipient);
  }

  /** The URLs of the click links a message's stored HTML was sent with, in link order (for messages whose links were not recorded). */
  linksOf(messageId: string, html: string): string[] {
    return trackableLinks(html, this.tokens.unsubscribeUrl(messageId));
  }
}
