import { DynamicModule, Module, Provider } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { DomainsModule } from '../domains/domains.module';
import { EmailModule } from '../email/email.module';
import { OutboxModule } from '../outbox/outbox.module';
import { ProviderEventsModule } from '../provider-events/provider-events.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { ContentScanner } from './content-scan/content-scanner';
import { DsnService } from './dsn/dsn.service';
import { ForwardingController } from './forwarding.controller';
import { ForwardingService } from './forwarding.service';
import { InboundAuthentication } from './inbound-authentication';
import { InboundRateLimits } from './inbound-rate-limits';
import { InboundSmtpServer } from './inbound-smtp.server';
import { InboundTls } from './inbound-tls';
import { SenderRewriting } from './sender-rewriting';

const senderRewritingProvider: Provider = {
  provide: SenderRewriting,
  inject: [AppConfigService],
  useFactory: (config: AppConfigService) => new SenderRewriting(config.derivedKeys('mailroom srs v1')),
};

/**
 * Forwarding (D-31): the rules' resolution for every role; with the workers (APP_ROLE worker or all), the delivery
 * status notifications of forwarded mail, and the inbound SMTP server when INBOUND_SMTP_PORT is not 0.
 */
@Module({})
export class ForwardingModule {
  static register(config: AppConfigService): DynamicModule {
    const server = config.runsWorkers && config.env.INBOUND_SMTP_PORT !== 0 ? [InboundSmtpServer, InboundTls, InboundRateLimits] : [];
    // Notifications of forwarded mail that failed are made where it is delivered.
    const dsn = config.runsWorkers ? [DsnService] : [];
    return {
      module: ForwardingModule,
      imports: [DomainsModule, SuppressionModule, OutboxModule, EmailModule.register(config), ProviderEventsModule],
      controllers: [ForwardingController],
      providers: [ForwardingService, ContentScanner, InboundAuthentication, senderRewritingProvider, ...server, ...dsn],
    };
  }
}
