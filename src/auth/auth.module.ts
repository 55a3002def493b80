import { Global, Module } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { ApiKeyGuard } from './api-key.guard';
import { AuthRoutesCheck } from './auth-routes.check';
import { OperatorAccess } from './operator-access';

@Global()
@Module({
  imports: [DiscoveryModule, ApiKeysModule],
  providers: [{ provide: APP_GUARD, useClass: ApiKeyGuard }, AuthRoutesCheck, OperatorAccess],
  exports: [OperatorAccess],
})
export class AuthModule {}
