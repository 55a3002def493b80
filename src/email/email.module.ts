import { DynamicModule, Module, Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfigService } from '../config/app-config.service';
import { DomainsModule } from '../domains/domains.module';
import { ListsModule } from '../lists/lists.module';
import { observePool } from '../metrics/metrics';
import { QuotasModule } from '../quotas/quotas.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { TemplatesModule } from '../templates/templates.module';
import { TrackingLinksModule } from '../tracking/tracking-links.module';
import { BatchSendsService } from './batch/batch-sends.service';
import { DeliveredOutcomes } from './delivered-outcomes';
import { DeliveryService } from './delivery.service';
import { EmailController } from './email.controller';
import { EmailProcessor } from './email.processor';
import { OutboxModule } from '../outbox/outbox.module';
import { DeliveryStore } from './delivery.store';
import { EmailService } from './email.service';
import { EmailSweeper } from './email.sweeper';
import { ForwardFailureReports } from './forward-failure-reports';
import { ListSend } from './list-sends/list-send.entity';
import { ListSendProcessor } from './list-sends/list-send.processor';
import { ListSendQueue } from './list-sends/list-send.queue';
import { ListSendSweeper } from './list-sends/list-send.sweeper';
import { ListSendsController } from './list-sends/list-sends.controller';
import { ListSendsService } from './list-sends/list-sends.service';
import { MessagesRepository } from './messages.repository';
import { PersonalMessages } from './personal-messages';
import { ProviderHealthModule } from './provider-health.module';
import { ReturnPathsModule } from './return-paths.module';
import { SendPacer } from './send-pacer';
import { MAIL_TRANSPORT, MailTransport } from './transport/mail-transport';
import { OutboxTransport } from './transport/outbox.transport';
import { SmtpTransport } from './transport/smtp.transport';

const transportProvider: Provider = {
  provide: MAIL_TRANSPORT,
  inject: [AppConfigService],
  useFactory: (config: AppConfigService): MailTransport => {
    if (!config.env.SMTP_URL) return new OutboxTransport(config.env.OUTBOX_DIR);
    const transport = new SmtpTransport(config.env.SMTP_URL, config.env.SMTP_POOL_SIZE);
    observePool('smtp', () => transport.connections());
    return transport;
  },
};

/**
 * Sending email: the send, batch and list-send API (every role that serves HTTP hands messages to the outbox),
 * and, when this instance runs workers (APP_ROLE worker or all), the delivery worker, the pacer, the transport and
 * the sweeper. The provider's health is shared by all roles: workers write it, every instance's /health/ready reads it.
 */
@Module({})
export class EmailModule {
  private static readonly registered = new WeakMap<AppConfigService, DynamicModule>();

  /** The same module for the same configuration: AppModule and forwarding (return paths, the reports of forwarded mail that failed) both import it. */
  static register(config: AppConfigService): DynamicModule {
    let module = EmailModule.registered.get(config);
    if (!module) EmailModule.registered.set(config, (module = EmailModule.build(config)));
    return module;
  }

  private static build(config: AppConfigService): DynamicModule {
    const workerProviders = config.runsWorkers
      ? [DeliveryService, DeliveredOutcomes, SendPacer, EmailProcessor, EmailSweeper, transportProvider, ListSendProcessor, ListSendSweeper]
      : [];
    return {
      module: EmailModule,
      imports: [
        OutboxModule,
        DomainsModule,
        TemplatesModule,
        SuppressionModule,
        ProviderHealthModule,
        TrackingLinksModule,
        ListsModule,
        QuotasModule,
        ReturnPathsModule,
        TypeOrmModule.forFeature([ListSend]),
      ],
      controllers: [EmailController, ListSendsController],
      providers: [
        EmailService,
        MessagesRepository,
        DeliveryStore,
        PersonalMessages,
        ListSendsService,
        ListSendQueue,
        BatchSendsService,
        ForwardFailureReports,
        ...workerProviders,
      ],
      exports: [ReturnPathsModule, ForwardFailureReports],
    };
  }
}
