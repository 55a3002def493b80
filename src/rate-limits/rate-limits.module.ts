import { Module } from '@nestjs/common';
import { RateLimitModule } from './rate-limit.module';
import { RateLimitsController } from './rate-limits.controller';
import { WhoamiController } from './whoami.controller';

/** The limiter (applied to every request) and the routes that report it: /rate-limits, /auth/whoami. */
@Module({
  imports: [RateLimitModule],
  controllers: [RateLimitsController, WhoamiController],
})
export class RateLimitsModule {}
