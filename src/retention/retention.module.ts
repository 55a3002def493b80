import { DynamicModule, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { OutboxModule } from '../outbox/outbox.module';
import { TrackingLinksModule } from '../tracking/tracking-links.module';
import { MessageContentRule, RetentionRules } from './retention-rules';
import { RetentionSweeper } from './retention.sweeper';

/** Retention (RETENTION_*_DAYS): on workers, the sweeper and the rules it applies. */
@Module({})
export class RetentionModule {
  static register(config: AppConfigService): DynamicModule {
    return {
      module: RetentionModule,
      imports: [OutboxModule, TrackingLinksModule],
      providers: config.runsWorkers ? [MessageContentRule, RetentionRules, RetentionSweeper] : [],
    };
  }
}
