import { DynamicModule, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { EmailModule } from '../email/email.module';

/** `POST /provider/events` (D-24): the delivery provider's word on delivered, bounced and complained messages. */
@Module({})
export class ProviderEventsModule {
  static register(config: AppConfigService): DynamicModule {
    return {
      module: ProviderEventsModule,
      imports: [EmailModule.register(config)],
      controllers: [],
      providers: [],
    };
  }
}
