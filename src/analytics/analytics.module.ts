import { Module } from '@nestjs/common';

/** Email and form analytics answered from hourly rollups kept as events happen (`/email/analytics`, `/analytics`). */
@Module({})
export class AnalyticsModule {}
