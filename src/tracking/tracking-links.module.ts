import { Module } from '@nestjs/common';
import { TrackingTokens } from './tracking-tokens';

/** The tokens of tracking and unsubscribe links, for whoever writes such links (senders) or reads them (the tracking routes). */
@Module({
  providers: [TrackingTokens],
  exports: [TrackingTokens],
})
export class TrackingLinksModule {}
