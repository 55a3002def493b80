import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { updateAccountSettings } from '../accounts/account-settings';
import { AppException } from '../common/errors/app.exception';
import { AppConfigService } from '../config/app-config.service';
import type { QuotaName } from '../quotas/quota-policy';
import { QuotaService } from '../quotas/quota.service';
import { retentionPolicy } from '../retention/retention-policy';
import {
  AccountQuotasDto,
  AccountSettingsDto,
  QuotaStandingDto,
  RetentionSettingsDto,
  UpdateAccountSettingsDto,
} from './dto/account-settings.dto';

/** An account's own settings (global_limits), shown with every quota and its usage: what a user reads before a 429. */
@Injectable()
export class AccountSettingsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly quotas: QuotaService,
    private readonly config: AppConfigService,
  ) {}

  async get(accountId: string): Promise<AccountSettingsDto> {
    const standing = await this.quotas.standing(accountId);
    if (!standing) throw AppException.notFound('Account', accountId);
    const { account } = standing;
    const quotas = Object.fromEntries(
      standing.quotas.map(({ quota, limit, used, resetAtMs }) => [
        quota.name,
        { limit, used, remaining: limit === null ? null : Math.max(0, limit - used), reset_time: new Date(resetAtMs).toISOString() },
      ]),
    ) as Record<QuotaName, QuotaStandingDto> satisfies AccountQuotasDto;
    return {
      tier: account.tier,
      quotas_enforced: this.config.env.QUOTAS_ENABLED,
      global_limits: {
        hourly: account.globalLimits.hourly ?? null,
        daily: account.globalLimits.daily ?? null,
        monthly: account.globalLimits.monthly ?? null,
      },
      quotas,
      retention: retentionSettings(this.config),
    };
  }

  async update(accountId: string, dto: UpdateAccountSettingsDto): Promise<AccountSettingsDto> {
    const updated = await updateAccountSettings(this.dataSource, accountId, { global_limits: dto.global_limits });
    if (!updated) throw AppException.notFound('Account', accountId);
    this.quotas.accountChanged(accountId);
    return this.get(accountId);
  }
}

function retentionSettings(config: AppConfigService): RetentionSettingsDto {
  const policy = retentionPolicy(config.env);
  return {
    message_content_days: policy.message_content,
    inbound_messages_days: policy.inbound_messages,
    outbox_events_days: policy.outbox_events,
    webhook_deliveries_days: policy.webhook_deliveries,
  };
}
