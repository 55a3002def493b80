import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AccountConfigModule } from './account-config/account-config.module';
import { AnalyticsModule } from './analytics/analytics.module';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { BillingModule } from './billing/billing.module';
import { CollectionsModule } from './forms/collections/collections.module';
import { AuthModule } from './auth/auth.module';
import { CryptoModule } from './common/crypto/crypto.module';
import { IdempotencyModule } from './common/idempotency/idempotency.module';
import { loggerOptions } from './common/http/logger.options';
import { AppConfigService } from './config/app-config.service';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { DomainsModule } from './domains/domains.module';
import { DomainFormsModule } from './forms/domains/domain-forms.module';
import { EmailModule } from './email/email.module';
import { FormsModule } from './forms/forms.module';
import { ForwardingModule } from './forwarding/forwarding.module';
import { InstantFormsModule } from './forms/instant/instant-forms.module';
import { SpamFolderModule } from './forms/spam-folder/spam-folder.module';
import { NotificationReleasesModule } from './forms/notification-releases/notification-releases.module';
import { SubmissionsModule } from './forms/submissions/submissions.module';
import { HealthModule } from './health/health.module';
import { ListsModule } from './lists/lists.module';
import { MetricsModule } from './metrics/metrics.module';
import { OperatorModule } from './operator/operator.module';
import { ProjectsModule } from './projects/projects.module';
import { ProviderEventsModule } from './provider-events/provider-events.module';
import { QuotasModule } from './quotas/quotas.module';
import { QueueModule } from './queue/queue.module';
import { RateLimitsModule } from './rate-limits/rate-limits.module';
import { RedisModule } from './redis/redis.module';
import { RetentionModule } from './retention/retention.module';
import { SettingsModule } from './settings/settings.module';
import { SuppressionModule } from './suppression/suppression.module';
import { TemplatesModule } from './templates/templates.module';
import { TrackingModule } from './tracking/tracking.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { WorkerThreadsModule } from './worker-threads/worker-threads.module';

export interface AppModuleOptions {
  config: AppConfigService;
  /** This process starts the worker threads (main.ts with APP_ROLE=all and WORKER_PROCESSES > 0). */
  superviseWorkers?: boolean;
}

@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(options.config),
        LoggerModule.forRootAsync({ inject: [AppConfigService], useFactory: loggerOptions }),
        DatabaseModule,
        RedisModule,
        CryptoModule,
        QueueModule,
        IdempotencyModule,
        AuthModule,
        RateLimitsModule,
        HealthModule,
        MetricsModule,
        OperatorModule,
        ApiKeysModule,
        DomainFormsModule,
        DomainsModule,
        TemplatesModule,
        SuppressionModule,
        EmailModule.register(options.config),
        ProjectsModule,
        CollectionsModule,
        FormsModule,
        ListsModule,
        WebhooksModule.register(options.config),
        TrackingModule,
        ProviderEventsModule,
        QuotasModule,
        SettingsModule,
        BillingModule,
        AnalyticsModule,
        ForwardingModule.register(options.config),
        AccountConfigModule,
        RetentionModule.register(options.config),
        InstantFormsModule,
        SpamFolderModule,
        NotificationReleasesModule,
        // Last: its POST /{domain}/{form} would shadow any two-segment POST registered after it.
        SubmissionsModule,
        ...(options.superviseWorkers ? [WorkerThreadsModule] : []),
      ],
    };
  }
}
