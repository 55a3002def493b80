import { Module } from '@nestjs/common';
import { ProviderHealthModule } from '../email/provider-health.module';
import { HealthController } from './health.controller';

@Module({ imports: [ProviderHealthModule], controllers: [HealthController] })
export class HealthModule {}
