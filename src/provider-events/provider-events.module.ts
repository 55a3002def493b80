import { Module } from '@nestjs/common';
import { ReturnPathsModule } from '../email/return-paths.module';
import { OutboxModule } from '../outbox/outbox.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { ProviderEventsController } from './provider-events.controller';
import { ProviderEventsService } from './provider-events.service';
import { ProviderSignatureGuard } from './provider-signature.guard';
import { ProviderWebhookIds } from './provider-webhook-ids.store';

/** `POST /provider/events` (D-24): the delivery provider's word on delivered, bounced and complained messages. */
@Module({
  imports: [OutboxModule, ReturnPathsModule, SuppressionModule],
  controllers: [ProviderEventsController],
  providers: [ProviderEventsService, ProviderSignatureGuard, ProviderWebhookIds],
  exports: [ProviderEventsService],
})
export class ProviderEventsModule {}
