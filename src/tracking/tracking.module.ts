import { Module } from '@nestjs/common';
import { ListsModule } from '../lists/lists.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { TrackingController } from './tracking.controller';
import { TrackingLinksModule } from './tracking-links.module';
import { TrackingRepository } from './tracking.repository';
import { TrackingService } from './tracking.service';

/** Opens, clicks and unsubscribes (D-22): the public `/t/…` and `/u/…` routes. */
@Module({
  imports: [TrackingLinksModule, SuppressionModule, ListsModule],
  controllers: [TrackingController],
  providers: [TrackingService, TrackingRepository],
})
export class TrackingModule {}
