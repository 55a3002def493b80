import { DynamicModule, Module, Provider } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { DomainsModule } from '../domains/domains.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { TemplatesModule } from '../templates/templates.module';
import { TrackingLinksModule } from '../tracking/tracking-links.module';
import { DeliveredOutcomes } from './delivered-outcomes';
import { DeliveryService } from './delivery.service';
import { EmailController } from './email.controller';
import { EmailProcessor } from './email.processor';
import { EmailQueue } from './email.queue';
import { EmailRepository } from './email.repository';
import { EmailService } from './email.service';
import { EmailSweeper } from './email.sweeper';
import { ProviderHealthModule } from './provider-health.module';
import { SendPacer } from './send-pacer';
import { SuppressionLookup } from './suppression-lookup';
import { MAIL_TRANSPORT, MailTransport } from './transport/mail-transport';
import { OutboxTransport } from './transport/outbox.transport';
import { SmtpTransport } from './transport/smtp.transport';

const transportProvider: Provider = {
  provide: MAIL_TRANSPORT,
  inject: [AppConfigService],
  useFactory: (config: AppConfigService): MailTransport =>
    config.env.SMTP_URL ? new SmtpTransport(config.env.SMTP_URL, config.env.SMTP_POOL_SIZE) : new OutboxTransport(config.env.OUTBOX_DIR),
};

/**
 * Sending email: the send API (every role that serves HTTP enqueues), and, when this instance runs
 * workers (APP_ROLE worker or all), the delivery worker, the pacer, the transport and the sweeper. The
 * provider's health is shared by all roles: workers write it, every instance's /health/ready reads it.
 */
@Module({})
export class EmailModule {
  private static readonly registered = new WeakMap<AppConfigService, DynamicModule>();

  /** The same module for the same configuration: AppModule and the form pipeline both import it. */
  static register(config: AppConfigService): DynamicModule {
    let module = EmailModule.registered.get(config);
    if (!module) EmailModule.registered.set(config, (module = EmailModule.build(config)));
    return module;
  }

  private static build(config: AppConfigService): DynamicModule {
    const workerProviders = config.runsWorkers
      ? [DeliveryService, DeliveredOutcomes, SendPacer, EmailProcessor, EmailSweeper, transportProvider]
      : [];
    return {
      module: EmailModule,
      imports: [DomainsModule, TemplatesModule, SuppressionModule, ProviderHealthModule, TrackingLinksModule],
      controllers: [EmailController],
      providers: [EmailService, EmailRepository, EmailQueue, SuppressionLookup, ...workerProviders],
      exports: [EmailService],
    };
  }
}
