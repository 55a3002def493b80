import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKey } from '../auth/api-key.entity';
import { ApiKeyCache } from '../auth/api-key.cache';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { KnownKeysFilter } from '../auth/known-keys.filter';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKey])],
  controllers: [ApiKeysController],
  providers: [ApiKeysService, ApiKeyCache, KnownKeysFilter],
  exports: [ApiKeysService, ApiKeyCache],
})
export class ApiKeysModule {}
