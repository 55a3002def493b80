import { Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiKeyCache } from '../../api-keys/api-key.cache';
import { AppConfigService } from '../../config/app-config.service';
import { RedisService } from '../../redis/redis.service';
import type { AuthContext } from '../auth/auth-context';
import { readCredential } from '../auth/credentials';
import { AppException } from '../errors/app.exception';
import { ErrorCode } from '../errors/error-code';
import { AccountLimitsCache } from './account-limits.cache';
import { RateLimitClock } from './rate-limit.clock';
import { blocking, tightest, tooManyRequests, writeRateLimitHeaders } from './rate-limit.headers';
import {
  accountLimits,
  Caller,
  ENDPOINT_LIMITS,
  endpointLimitOf,
  isStatusPath,
  isUnlimitedPath,
  PlanLimits,
  rulesFor,
} from './rate-limit.policy';
import { RateLimitStorage } from './rate-limit.storage';
import { LimitDecision, LimitState } from './rate-limit.types';

export interface CallerLimits {
  plan: AuthContext['accountTier'];
  /** The account's limits in force: the plan's, with settings.limits laid over them. */
  planLimits: PlanLimits;
  exempt: boolean;
  multiplier: number;
  /** The key's and the account's limits. */
  scopes: LimitState[];
  /** Every endpoint limit, counted for this account. */
  endpoints: LimitState[];
}

/**
 * The limiter (D-11, D-12): every limit a request falls under, decided in one Redis round trip, and the
 * X-RateLimit-* headers of the tightest one on every response.
 */
@Injectable()
export class RateLimitService {
  private readonly logger = new Logger(RateLimitService.name);
  private readonly redisKey: (...parts: string[]) => string;
  private unavailable = false;

  constructor(
    private readonly config: AppConfigService,
    private readonly storage: RateLimitStorage,
    private readonly keys: ApiKeyCache,
    private readonly accounts: AccountLimitsCache,
    private readonly clock: RateLimitClock,
    redis: RedisService,
  ) {
    this.redisKey = (...parts) => redis.key(...parts);
  }

  get enabled(): boolean {
    return this.config.env.RATE_LIMIT_ENABLED;
  }

  /** Counts the request against every limit it falls under; throws the 429 (or 503) when it may not pass. */
  async enforce(request: Request, response: Response): Promise<void> {
    if (!this.enabled || request.method === 'OPTIONS' || isUnlimitedPath(request.path)) return;
    const caller = await this.callerOf(request);
    const rules = rulesFor(caller, endpointLimitOf(request.path), this.redisKey);
    if (rules.length === 0) return;

    const decision = await this.decide(rules, isStatusPath(request.path) ? 0 : 1);
    if (!decision.allowed) {
      const refusing = blocking(decision.states);
      writeRateLimitHeaders(response, refusing);
      throw tooManyRequests(refusing);
    }
    const reported = tightest(decision.states);
    if (reported) writeRateLimitHeaders(response, reported);
  }

  /** Every limit that applies to a key, read without counting. */
  async limitsOf(auth: AuthContext): Promise<CallerLimits> {
    const planLimits = accountLimits(auth.accountTier, await this.accounts.get(auth.accountId));
    const caller: Caller = { kind: 'key', auth, account: planLimits };
    const scopes = rulesFor(caller, null, this.redisKey);
    const endpoints = ENDPOINT_LIMITS.flatMap((endpoint) =>
      rulesFor(caller, endpoint, this.redisKey).filter((rule) => rule.scope === 'endpoint'),
    );
    const { states } = await this.decide([...scopes, ...endpoints], 0);
    return {
      plan: auth.accountTier,
      planLimits,
      exempt: auth.restrictions.exempt === true,
      multiplier: auth.restrictions.multiplier ?? 1,
      scopes: states.slice(0, scopes.length),
      endpoints: states.slice(scopes.length),
    };
  }

  private async decide(rules: Parameters<RateLimitStorage['consume']>[0], cost: number): Promise<LimitDecision> {
    try {
      const decision = await this.storage.consume(rules, cost, this.clock.now());
      if (this.unavailable) {
        this.unavailable = false;
        this.logger.log('Rate limiter reaches Redis again');
      }
      return decision;
    } catch (err) {
      // Never let traffic through unlimited, never hang: the caller may retry shortly. Logged once per outage.
      if (!this.unavailable) {
        this.unavailable = true;
        this.logger.error(`Rate limiter cannot reach Redis, answering 503: ${(err as Error).message}`);
      }
      throw new AppException(ErrorCode.ServiceUnavailable, 'Rate limiting is unavailable; retry shortly', undefined, {
        'Retry-After': '1',
      });
    }
  }

  /** The key the request carries if it is valid and unexpired (the guard says why not); else its client IP. */
  private async callerOf(request: Request): Promise<Caller> {
    const credential = readCredential(request);
    const key = credential ? await this.keys.resolve(credential.secret).catch(() => null) : null;
    const usable =
      key !== null &&
      !(credential?.source === 'x-public-token' && key.keyType !== 'public') &&
      (key.expiresAt === null || key.expiresAt > Date.now());
    if (!usable) return { kind: 'anonymous', ip: request.ip ?? request.socket.remoteAddress ?? 'unknown' };
    const overrides = await this.accounts.get(key.accountId);
    return { kind: 'key', auth: key, account: accountLimits(key.accountTier, overrides) };
  }
}
