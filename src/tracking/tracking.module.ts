import { DynamicModule, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { EmailModule } from '../email/email.module';
import { ListsModule } from '../lists/lists.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { RepeatedOpens } from './repeated-opens';
import { TrackingController } from './tracking.controller';
import { TrackingLinksModule } from './tracking-links.module';
import { TrackingRepository } from './tracking.repository';
import { TrackingService } from './tracking.service';

/** Opens, clicks and unsubscribes (D-22): the public `/t/…` and `/u/…` routes; their events are the email module's. */
@Module({})
export class TrackingModule {
  static register(config: AppConfigService): DynamicModule {
    return {
      module: TrackingModule,
      imports: [EmailModule.register(config), TrackingLinksModule, SuppressionModule, ListsModule],
      controllers: [TrackingController],
      providers: [TrackingService, TrackingRepository, RepeatedOpens],
    };
  }
}
