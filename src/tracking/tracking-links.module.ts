import { Module } from '@nestjs/common';
import { MessageLinksRepository } from './message-links.repository';
import { TrackedContentService } from './tracked-content.service';
import { TrackingTokens } from './tracking-tokens';

/**
 * The tokens of tracking and unsubscribe links and the URLs of click links, for whoever writes such links (senders)
 * or reads them (the tracking routes).
 */
@Module({
  providers: [TrackingTokens, MessageLinksRepository, TrackedContentService],
  exports: [TrackingTokens, MessageLinksRepository, TrackedContentService],
})
export class TrackingLinksModule {}
