import { Module } from '@nestjs/common';
import { AnalyticsController } from './analytics.controller';
import { AnalyticsRepository } from './analytics.repository';
import { AnalyticsService } from './analytics.service';

/**
 * Email, form and forwarding analytics answered from hourly rollups kept as events happen (`/email/analytics`,
 * `/analytics`). The rollups are written by triggers in PostgreSQL (migrations CreateAnalyticsRollups and
 * CreateForwardingStats), not by this module.
 */
@Module({
  controllers: [AnalyticsController],
  providers: [AnalyticsService, AnalyticsRepository],
})
export class AnalyticsModule {}
