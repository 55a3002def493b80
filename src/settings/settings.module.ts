import { Module } from '@nestjs/common';
import { QuotasModule } from '../quotas/quotas.module';
import { AccountSettingsController } from './account-settings.controller';
import { AccountSettingsService } from './account-settings.service';

/** GET and PATCH /settings: the account's own settings, shown with every quota and its usage and the retention policy. */
@Module({
  imports: [QuotasModule],
  controllers: [AccountSettingsController],
  providers: [AccountSettingsService],
})
export class SettingsModule {}
