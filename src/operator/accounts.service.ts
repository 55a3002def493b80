import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { AccountTier, AppConfigService } from '../config/app-config.service';
import { ApiKey } from '../auth/api-key.entity';
import { ApiKeyCache } from '../auth/api-key.cache';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { AppException } from '../common/errors/app.exception';
import { newId } from '../common/ids';
import { AccountLimitsCache } from '../rate-limits/account-limits.cache';
import { QuotaService } from '../quotas/quota.service';
import { Account } from '../accounts/account.entity';
import { updateAccountSettings } from '../accounts/account-settings';
import type { UpdateAccountDto } from './dto/account.dto';

/** Accounts (tenants) and the operator account (D-1, D-2). */
@Injectable()
export class AccountsService {
  private readonly logger = new Logger(AccountsService.name);

  constructor(
    @InjectRepository(Account) private readonly accounts: Repository<Account>,
    private readonly dataSource: DataSource,
    private readonly apiKeys: ApiKeysService,
    private readonly config: AppConfigService,
    private readonly keyCache: ApiKeyCache,
    private readonly limitsCache: AccountLimitsCache,
    private readonly quotas: QuotaService,
  ) {}

  /** A new account comes with its first admin key; both commit together. */
  async create(name: string, tier?: AccountTier): Promise<{ account: Account; key: ApiKey; secret: string }> {
    return this.dataSource.transaction(async (manager) => {
      const account = manager.create(Account, {
        id: newId('acc'),
        name,
        tier: tier ?? this.config.env.DEFAULT_ACCOUNT_TIER,
        isOperator: false,
        settings: {},
      });
      await manager.insert(Account, account);
      // No hourly limit of its own: the account's plan bounds it, and it can make keys of any limit (D-11).
      const { key, secret } = await this.apiKeys.create(
        account.id,
        { name: 'First admin key', keyType: 'admin', rateLimit: null },
        manager,
      );
      return { account, key, secret };
    });
  }

  list(): Promise<Account[]> {
    return this.accounts.find({ order: { createdAt: 'ASC' } });
  }

  /**
   * The operator sets an account's tier, request limits (settings.limits) and quotas (settings.quotas). Keys
   * carry the tier (ApiKeyCache), the limiter and the quotas cache the settings: all are read again at once.
   */
  async update(accountId: string, dto: UpdateAccountDto): Promise<Account> {
    const billing = dto.billingSelfService === undefined ? undefined : { self_service: dto.billingSelfService };
    const account = await updateAccountSettings(this.dataSource, accountId, { limits: dto.limits, quotas: dto.quotas, billing }, dto.tier);
    if (!account) throw AppException.notFound('Account', accountId);
    this.limitsCache.forget(accountId);
    this.quotas.accountChanged(accountId);
    await this.keyCache.invalidate('*');
    return account;
  }

  /**
   * Makes sure the operator account exists and holds `secret` as an admin key (BOOTSTRAP_ADMIN_KEY), or
   * a fresh key when none is given (`npm run cli -- bootstrap`); neither has an hourly limit of its own.
   * Returns the new secret, or null when the given secret was adopted before (a deleted bootstrap key stays
   * deleted).
   */
  async bootstrapOperator(secret?: string): Promise<string | null> {
    return this.dataSource.transaction(async (manager) => {
      // Serialise concurrent starts of several instances.
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['mailroom:bootstrap']);
      let operator = await manager.findOneBy(Account, { isOperator: true });
      if (!operator) {
        operator = manager.create(Account, {
          id: newId('acc'),
          name: 'Operator',
          tier: 'enterprise',
          isOperator: true,
          settings: {},
        });
        await manager.insert(Account, operator);
        this.logger.log(`Created the operator account ${operator.id}`);
      }
      if (secret) {
        const outcome = await this.apiKeys.adopt(operator.id, 'Bootstrap admin key', secret, manager);
        if (outcome === 'gone') {
          this.logger.warn(
            'BOOTSTRAP_ADMIN_KEY holds a secret whose key was deleted: it is not adopted again. Set a new secret to get a new bootstrap key.',
          );
        }
        return outcome === 'added' ? secret : null;
      }
      const created = await this.apiKeys.create(operator.id, { name: 'Operator admin key', keyType: 'admin', rateLimit: null }, manager);
      return created.secret;
    });
  }
}
