import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountUsage } from './account-usage.entity';
import { AccountUsageRepository } from './account-usage.repository';
import { QuotaAccountsCache } from './quota-accounts.cache';
import { QuotaService } from './quota.service';
import { QuotaStore } from './quota.store';

/** Usage per account and hour, and the quotas counted against it (D-13). */
@Module({
  imports: [TypeOrmModule.forFeature([AccountUsage])],
  providers: [QuotaService, QuotaStore, QuotaAccountsCache, AccountUsageRepository],
  exports: [QuotaService, AccountUsageRepository],
})
export class QuotasModule {}
