import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { ListsModule } from '../lists/lists.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { RepeatedOpens } from './repeated-opens';
import { TrackingController } from './tracking.controller';
import { TrackingLinksModule } from './tracking-links.module';
import { TrackingRepository } from './tracking.repository';
import { TrackingService } from './tracking.service';
import { UnsubscribeConfirmations } from './unsubscribe-confirmations';

/** Opens, clicks and unsubscribes (D-22): the public `/t/…` and `/u/…` routes; their events go into the outbox's message store. */
@Module({
  imports: [OutboxModule, TrackingLinksModule, SuppressionModule, ListsModule],
  controllers: [TrackingController],
  providers: [TrackingService, TrackingRepository, RepeatedOpens, UnsubscribeConfirmations],
})
export class TrackingModule {}
