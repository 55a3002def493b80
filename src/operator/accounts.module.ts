import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { RateLimitModule } from '../rate-limits/rate-limit.module';
import { QuotasModule } from '../quotas/quotas.module';
import { Account } from '../accounts/account.entity';
import { AccountsController } from './accounts.controller';
import { AccountsService } from './accounts.service';
import { OperatorBootstrap } from './operator-bootstrap';

@Module({
  imports: [TypeOrmModule.forFeature([Account]), ApiKeysModule, QuotasModule, RateLimitModule],
  controllers: [AccountsController],
  providers: [AccountsService, OperatorBootstrap],
  exports: [AccountsService],
})
export class AccountsModule {}
