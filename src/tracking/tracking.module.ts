import { DynamicModule, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { EmailModule } from '../email/email.module';
import { TrackingLinksModule } from './tracking-links.module';

/** Opens, clicks and unsubscribes (D-22): the public `/t/…` and `/u/…` routes. */
@Module({})
export class TrackingModule {
  static register(config: AppConfigService): DynamicModule {
    return {
      module: TrackingModule,
      imports: [EmailModule.register(config), TrackingLinksModule],
      controllers: [],
      providers: [],
    };
  }
}
