import { Global, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { AccountLimitsCache } from './account-limits.cache';
import { RateLimitClock } from './rate-limit.clock';
import { RateLimitService } from './rate-limit.service';
import { RateLimitStorage } from './rate-limit.storage';

/**
 * The limiter (applied to every request by app.setup.ts, before body parsing). Global so features can read limits; @nestjs/throttler is registered with the Redis
 * storage, so a feature that adds @UseGuards(ThrottlerGuard) + @Throttle() counts in Redis too.
 */
@Global()
@Module({
  imports: [
    ApiKeysModule,
    ThrottlerModule.forRootAsync({
      useFactory: (storage: RateLimitStorage) => ({ throttlers: [], storage }),
      inject: [RateLimitStorage],
    }),
  ],
  providers: [RateLimitStorage, RateLimitService, RateLimitClock, AccountLimitsCache],
  exports: [RateLimitStorage, RateLimitService, RateLimitClock, AccountLimitsCache],
})
export class RateLimitModule {}
