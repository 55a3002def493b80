import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiKeyCache, ResolvedKey } from '../auth/api-key.cache';
import { AppConfigService } from '../config/app-config.service';
import { rateLimitRejections } from '../metrics/metrics';
import { RedisService } from '../redis/redis.service';
import type { AuthContext } from '../auth/auth-context';
import { readCredential } from '../auth/credentials';
import { AccountLimitsCache } from './account-limits.cache';
import { RateLimitClock } from './rate-limit.clock';
import { blocking, tightest, tooManyRequests, writeRateLimitHeaders } from './rate-limit.headers';
import {
  accountLimits,
  authFailureRule,
  Caller,
  confirmationCapRefusal,
  confirmationEmailsRule,
  ENDPOINT_LIMITS,
  endpointLimitOf,
  fallbackRule,
  formIpRule,
  isAnonymousFormPost,
  isRateLimited,
  isStatusPath,
  openRouteIpRule,
  openRouteOf,
  PlanLimits,
  rulesFor,
} from './rate-limit.policy';
import { InProcessCounters } from './rate-limit.memory';
import { RateLimitStorage } from './rate-limit.storage';
import { CountMode, LimitDecision, LimitRule, LimitState } from './rate-limit.types';

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

/** While Redis is away, the limiter tries it again this often (at once when its connection comes back). */
const REDIS_RETRY_MS = 1000;

/**
 * The limiter (D-11, D-12): every limit a request falls under, decided in one Redis round trip, and the
 * X-RateLimit-* headers of the tightest one on every response. When Redis cannot be reached, each process
 * enforces RATE_LIMIT_FALLBACK_SHARE of every limit in memory until it can.
 */
@Injectable()
export class RateLimitService implements OnModuleInit {
  private readonly logger = new Logger(RateLimitService.name);
  private readonly redisKey: (...parts: string[]) => string;
  private readonly fallback = new InProcessCounters();
  private redisDown = false;
  private retryRedisAt = 0;

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

  onModuleInit(): void {
    this.storage.connection.on('ready', () => {
      this.retryRedisAt = 0;
    });
  }

  get enabled(): boolean {
    return this.config.env.RATE_LIMIT_ENABLED;
  }

  /** Counts the request against every limit it falls under; throws the 429 when it may not pass. */
  async enforce(request: Request, response: Response): Promise<void> {
    if (!this.enabled || !isRateLimited(request.method, request.path)) return;
    const openRoute = openRouteOf(request.method, request.path);
    if (openRoute === 'tracking') return this.enforceOpenRouteIpLimit(request, response, 'tracking');
    if (openRoute === 'provider-events') return this.refuseSpentFailureBudget(request, response);
    const caller = await this.callerOf(request, response);
    if (caller.kind === 'anonymous' && caller.formPost) {
      // A post to an unknown form spends the failure budget once the form is looked up; an IP that spent it is
      // refused here, before its body is read.
      await this.refuseSpentFailureBudget(request, response);
      return this.enforceOpenRouteIpLimit(request, response, 'form-post');
    }
    const rules = rulesFor(caller, endpointLimitOf(request.path), this.redisKey);
    if (rules.length === 0) return;
    this.apply(await this.decide(rules, isStatusPath(request.path) ? 0 : 1), response);
  }

  /** Counts the client IP's generous per-minute limit of the form or tracking routes; 429 past it. */
  private async enforceOpenRouteIpLimit(request: Request, response: Response, route: 'form-post' | 'tracking'): Promise<void> {
    const { RATE_LIMIT_FORM_POSTS_PER_MINUTE, RATE_LIMIT_TRACKING_PER_MINUTE } = this.config.env;
    const perMinute = route === 'tracking' ? RATE_LIMIT_TRACKING_PER_MINUTE : RATE_LIMIT_FORM_POSTS_PER_MINUTE;
    this.apply(await this.decide([openRouteIpRule(route, clientIpOf(request), perMinute, this.redisKey)], 1), response);
  }

  /** 429 when the client IP has used up its failure budget; counts nothing (the failures count it). */
  private async refuseSpentFailureBudget(request: Request, response: Response): Promise<void> {
    const budget = await this.decide([authFailureRule(clientIpOf(request), this.redisKey)], 1, 'never');
    if (!budget.allowed) this.apply(budget, response);
  }

  /**
   * The key a presented secret stands for, or null when it is malformed or unknown. Only misses spend the
   * client IP's failed-authentication budget (callerOf, countAuthFailure), and a key found is never refused by
   * it. Once an IP has used it up, a secret the cache does not know is looked up only if it may be a key
   * (ApiKeyCache.mayExist): a secret that certainly is not one is refused (429) without a database lookup.
   * Rejects when PostgreSQL cannot be reached and the key has no recent copy: 503, never an IP limit or a 401.
   */
  async resolveCredential(request: Request, secret: string, response: Response): Promise<ResolvedKey | null> {
    const known = this.keys.cached(secret);
    if (known !== undefined) return known;
    if (this.enabled) {
      const budget = await this.decide([authFailureRule(clientIpOf(request), this.redisKey)], 1, 'never');
      if (!budget.allowed && !(await this.keys.mayExist(secret))) this.apply(budget, response);
    }
    return this.keys.resolve(secret);
  }

  /**
   * Counts a failed authentication (Bull Board's basic auth, a provider call with a bad signature) or a post to an
   * unknown form against the client IP's budget.
   */
  async countAuthFailure(request: Request, response: Response): Promise<void> {
    if (!this.enabled) return;
    this.apply(await this.decide([authFailureRule(clientIpOf(request), this.redisKey)], 1), response);
  }

  /** Counts a post to a form against the form's per-IP limit (D-11); 429 past it. */
  async enforceFormLimit(request: Request, response: Response, formId: string, perHour: number): Promise<void> {
    if (!this.enabled) return;
    this.apply(await this.decide([formIpRule(formId, clientIpOf(request), perHour, this.redisKey)], 1), response);
  }

  /** Counts an account's instant-form confirmation emails against their hourly cap; past it the request is refused whole (429). */
  async enforceConfirmationEmails(accountId: string, count: number): Promise<void> {
    if (!this.enabled || count === 0) return;
    const decision = await this.decide([confirmationEmailsRule(accountId, this.redisKey)], count);
    if (decision.allowed) return;
    rateLimitRejections.inc({ scope: 'account' });
    throw confirmationCapRefusal(decision.states[0], count);
  }

  /**
   * Whether one more event would pass every rule, counting nothing (the inbound SMTP server's check at RCPT TO): in
   * Redis, or while it is away in memory at RATE_LIMIT_FALLBACK_SHARE, as every other limit. Not gated by
   * RATE_LIMIT_ENABLED.
   */
  check(rules: readonly LimitRule[]): Promise<LimitDecision> {
    return this.decide(rules, 1, 'never');
  }

  /**
   * Counts one event that has happened against every rule, whether they allow it or not (a message the inbound SMTP
   * server committed after check() let it through): where check() reads.
   */
  count(rules: readonly LimitRule[]): Promise<LimitDecision> {
    return this.decide(rules, 1, 'always');
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

  /** Writes the headers of the tightest limit, or of the refusing one and throws the 429. */
  private apply(decision: LimitDecision, response: Response): void {
    if (!decision.allowed) {
      const refusing = blocking(decision.states);
      rateLimitRejections.inc({ scope: refusing.rule.scope });
      writeRateLimitHeaders(response, refusing);
      throw tooManyRequests(refusing);
    }
    const reported = tightest(decision.states);
    if (reported) writeRateLimitHeaders(response, reported);
  }

  private async decide(rules: readonly LimitRule[], cost: number, mode: CountMode = 'if-allowed'): Promise<LimitDecision> {
    const now = this.clock.now();
    if (!this.redisDown || Date.now() >= this.retryRedisAt) {
      // While Redis is away one request at a time finds out whether it is back; the others count in memory.
      if (this.redisDown) this.retryRedisAt = Date.now() + REDIS_RETRY_MS;
      try {
        const decision = await this.storage.consume(rules, cost, now, mode);
        if (this.redisDown) this.redisBack();
        return decision;
      } catch (err) {
        this.redisGone(err as Error);
      }
    }
    const share = this.config.env.RATE_LIMIT_FALLBACK_SHARE;
    return this.fallback.consume(
      rules.map((rule) => fallbackRule(rule, share)),
      cost,
      now,
      mode,
    );
  }

  private redisGone(err: Error): void {
    this.retryRedisAt = Date.now() + REDIS_RETRY_MS;
    if (this.redisDown) return;
    this.redisDown = true;
    const share = Math.round(this.config.env.RATE_LIMIT_FALLBACK_SHARE * 100);
    this.logger.error(
      `Rate limiter cannot reach Redis (${err.message}): this process enforces ${share}% of every limit in memory until it can`,
    );
  }

  private redisBack(): void {
    this.redisDown = false;
    this.fallback.clear();
    this.logger.log('Rate limiter reaches Redis again: its counters rule again');
  }

  /** The key the request carries if it is valid and unexpired (the guard says why not); else its client IP. */
  private async callerOf(request: Request, response: Response): Promise<Caller> {
    const ip = clientIpOf(request);
    const credential = readCredential(request);
    if (!credential) return { kind: 'anonymous', ip, formPost: isAnonymousFormPost(request.method, request.path) };
    const key = await this.resolveCredential(request, credential.secret, response);
    if (key === null) return { kind: 'anonymous', ip, failedAuth: true };
    const usable =
      !(credential.source === 'x-public-token' && key.keyType !== 'public') && (key.expiresAt === null || key.expiresAt > Date.now());
    if (!usable) return { kind: 'anonymous', ip };
    const overrides = await this.accounts.get(key.accountId);
    return { kind: 'key', auth: key, account: accountLimits(key.accountTier, overrides) };
  }
}

function clientIpOf(request: Request): string {
  return request.ip ?? request.socket.remoteAddress ?? 'unknown';
}
