import { Module } from '@nestjs/common';
import { AnalyticsController } from './analytics.controller';
import { AnalyticsRepository } from './analytics.repository';
import { AnalyticsService } from './analytics.service';

/**
 * Email and form analytics answered from hourly rollups kept as events happen (`/email/analytics`, `/analytics`).
 * The rollups are written by triggers in PostgreSQL (migration CreateAnalyticsRollups), not by this module.
 */
@Module({
  controllers: [AnalyticsController],
  providers: [AnalyticsService, AnalyticsRepository],
})
export class AnalyticsModule {}
