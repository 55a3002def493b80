import { DynamicModule, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';

/** Webhook registrations, and on workers the outbox publisher and the `webhooks` queue's deliveries (D-23). */
@Module({})
export class WebhooksModule {
  static register(config: AppConfigService): DynamicModule {
    const workerProviders = config.runsWorkers ? [] : [];
    return {
      module: WebhooksModule,
      imports: [],
      controllers: [],
      providers: [...workerProviders],
    };
  }
}
