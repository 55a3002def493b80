import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfigService } from '../config/app-config.service';
import { OutboxModule } from '../outbox/outbox.module';
import { WebhookAttempt } from './webhook-attempt.entity';
import { WebhookDeliveryService } from './webhook-delivery.service';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookDisabledNotices } from './webhook-disabled-notices';
import { WebhookEndpointGate } from './webhook-endpoint-gate';
import { WebhookEndpoints } from './webhook-endpoints';
import { WebhookEventBody } from './webhook-event-body.entity';
import { WebhookTargets } from './webhook-targets';
import { Webhook } from './webhook.entity';
import { WebhookProcessor } from './webhook.processor';
import { WebhookPublisher } from './webhook.publisher';
import { WebhookQueue } from './webhook.queue';
import { WebhookSweeper } from './webhook.sweeper';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

/** Webhook registrations, and on workers the outbox publisher and the `webhooks` queue's deliveries (D-23). */
@Module({})
export class WebhooksModule {
  static register(config: AppConfigService): DynamicModule {
    const workerProviders = config.runsWorkers
      ? [
          WebhookPublisher,
          WebhookDeliveryService,
          WebhookProcessor,
          WebhookSweeper,
          WebhookDisabledNotices,
          WebhookEndpointGate,
          WebhookEndpoints,
        ]
      : [];
    return {
      module: WebhooksModule,
      imports: [TypeOrmModule.forFeature([Webhook, WebhookDelivery, WebhookAttempt, WebhookEventBody]), OutboxModule],
      controllers: [WebhooksController],
      providers: [WebhooksService, WebhookTargets, WebhookQueue, ...workerProviders],
    };
  }
}
