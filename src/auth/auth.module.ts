import { Global, Module } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKey } from './api-key.entity';
import { ApiKeyCache } from './api-key.cache';
import { ApiKeyGuard } from './api-key.guard';
import { AuthRoutesCheck } from './auth-routes.check';
import { KnownKeysFilter } from './known-keys.filter';

/**
 * Who may call what: the one global guard, the start-up check that every route says who may call it, and the key
 * cache the guard and the limiter resolve credentials through. api-keys/ manages the keys this module reads.
 */
@Global()
@Module({
  imports: [DiscoveryModule, TypeOrmModule.forFeature([ApiKey])],
  providers: [{ provide: APP_GUARD, useClass: ApiKeyGuard }, AuthRoutesCheck, ApiKeyCache, KnownKeysFilter],
  exports: [ApiKeyCache],
})
export class AuthModule {}
