import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ProviderHealthModule } from '../email/provider-health.module';
import { GracefulShutdown } from './graceful-shutdown';
import { HealthController } from './health.controller';
import { HealthService } from './health.service';
import { ShutdownState } from './shutdown-state';

/** /health and /health/ready (terminus), and the order in which a process shuts down. */
@Module({
  imports: [TerminusModule.forRoot({ logger: false }), ProviderHealthModule],
  controllers: [HealthController],
  providers: [HealthService, ShutdownState, GracefulShutdown],
  exports: [HealthService],
})
export class HealthModule {}
