import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountUsage } from './account-usage.entity';
import { QuotaService } from './quota.service';

/** Usage per account and hour, and the quotas counted against it (D-13). */
@Module({
  imports: [TypeOrmModule.forFeature([AccountUsage])],
  providers: [QuotaService],
  exports: [QuotaService],
})
export class QuotasModule {}
