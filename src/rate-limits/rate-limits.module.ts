import { Global, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { AuthModule } from '../auth/auth.module';
import { AccountLimitsCache } from './account-limits.cache';
import { RateLimitClock } from './rate-limit.clock';
import { RateLimitService } from './rate-limit.service';
import { RateLimitStorage } from './rate-limit.storage';
import { RateLimitsController } from './rate-limits.controller';
import { WhoamiController } from './whoami.controller';

/**
 * The limiter (applied to every request by app.setup.ts, before body parsing) and the routes that report it:
 * /rate-limits, /auth/whoami. Global so features can read limits; @nestjs/throttler is registered with the Redis
 * storage, so a feature that adds @UseGuards(ThrottlerGuard) + @Throttle() counts in Redis too.
 */
@Global()
@Module({
  imports: [
    AuthModule,
    ThrottlerModule.forRootAsync({
      useFactory: (storage: RateLimitStorage) => ({ throttlers: [], storage }),
      inject: [RateLimitStorage],
    }),
  ],
  controllers: [RateLimitsController, WhoamiController],
  providers: [RateLimitStorage, RateLimitService, RateLimitClock, AccountLimitsCache],
  exports: [RateLimitStorage, RateLimitService, RateLimitClock, AccountLimitsCache],
})
export class RateLimitsModule {}
