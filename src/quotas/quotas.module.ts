import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountSettingsController } from './account-settings.controller';
import { AccountSettingsService } from './account-settings.service';
import { AccountUsage } from './account-usage.entity';
import { AccountUsageRepository } from './account-usage.repository';
import { QuotaAccountsCache } from './quota-accounts.cache';
import { QuotaService } from './quota.service';
import { QuotaStore } from './quota.store';

/** Usage per account and hour, the quotas counted against it (D-13), and the account's own settings route. */
@Module({
  imports: [TypeOrmModule.forFeature([AccountUsage])],
  controllers: [AccountSettingsController],
  providers: [QuotaService, QuotaStore, QuotaAccountsCache, AccountUsageRepository, AccountSettingsService],
  exports: [QuotaService, AccountUsageRepository],
})
export class QuotasModule {}
