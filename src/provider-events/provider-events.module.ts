import { DynamicModule, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { EmailModule } from '../email/email.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { ProviderEventsController } from './provider-events.controller';
import { ProviderEventsService } from './provider-events.service';
import { ProviderSignatureGuard } from './provider-signature.guard';
import { ProviderWebhookIds } from './provider-webhook-ids.store';

/** `POST /provider/events` (D-24): the delivery provider's word on delivered, bounced and complained messages. */
@Module({})
export class ProviderEventsModule {
  static register(config: AppConfigService): DynamicModule {
    return {
      module: ProviderEventsModule,
      imports: [EmailModule.register(config), SuppressionModule],
      controllers: [ProviderEventsController],
      providers: [ProviderEventsService, ProviderSignatureGuard, ProviderWebhookIds],
      exports: [ProviderEventsService],
    };
  }
}
