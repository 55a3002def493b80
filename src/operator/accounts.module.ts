import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { RateLimitsModule } from '../rate-limits/rate-limits.module';
import { QuotasModule } from '../quotas/quotas.module';
import { Account } from '../accounts/account.entity';
import { AccountsService } from './accounts.service';
import { OperatorBootstrap } from './operator-bootstrap';

/** Tenant accounts and the operator account: what /admin/accounts and `npm run cli -- bootstrap` change. */
@Module({
  imports: [TypeOrmModule.forFeature([Account]), ApiKeysModule, QuotasModule, RateLimitsModule],
  providers: [AccountsService, OperatorBootstrap],
  exports: [AccountsService],
})
export class AccountsModule {}
