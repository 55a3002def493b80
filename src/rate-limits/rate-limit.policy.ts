import { normalizeIp } from '@nestjs/throttler';
import type { AccountTier } from '../config/app-config.service';
import type { AuthContext } from '../auth/auth-context';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { HOUR_MS, LimitRule, LimitState, MINUTE_MS } from './rate-limit.types';

/**
 * What D-11 enforces, as data and pure functions: which limits a request falls under. The limiter turns
 * the rules into one Redis call; nothing here touches Redis.
 */

/** An account's request limits (spec "Limits by plan", variant B). Absent = unlimited. */
export interface PlanLimits {
  requests_per_hour?: number;
  requests_per_minute?: number;
  /** Token bucket capacity; it refills at requests_per_minute (or `burst` per minute without one). */
  burst?: number;
}

export const PLAN_LIMITS: Record<AccountTier, PlanLimits> = {
  free: { requests_per_hour: 1000, requests_per_minute: 50, burst: 100 },
  pro: { requests_per_hour: 25_000, requests_per_minute: 500, burst: 1000 },
  // Enterprise limits come from the account's settings.limits and are unlimited until set.
  enterprise: {},
};

/** Calls without a credential, per client IP (D-11). */
export const IP_LIMITS = { perHour: 300, perMinute: 60 };

/**
 * Failed authentications (a malformed or unknown key, also Bull Board's basic auth) and posts to unknown
 * forms per client IP: a tight budget, so guessing keys or form ids costs the database at most this many
 * lookups a minute per address.
 */
export const AUTH_FAILURE_LIMIT = { perMinute: 30 };

export interface EndpointLimit {
  /**
   * Nest route pattern; `:name` is one path segment. It covers its path and every path below it
   * (`/instant/forms` also `/instant/forms/batch`); a trailing `/*` says so in the spec's own words.
   */
  pattern: string;
  perHour: number;
  perMinute: number;
  /** Paths below the pattern that this limit does not count (same syntax). */
  except?: readonly string[];
}

/** The spec's first endpoint table, plus the paths of the second set that the first lacks (D-11). */
export const ENDPOINT_LIMITS: readonly EndpointLimit[] = [
  { pattern: '/v1/:domain/send', perHour: 1000, perMinute: 60 },
  // The confirmation link is followed by the recipient from an email client, not by the tenant: only the
  // client IP's limits hold it, as before.
  { pattern: '/instant/forms', perHour: 500, perMinute: 30, except: ['/instant/forms/confirm'] },
  { pattern: '/collections', perHour: 200, perMinute: 20 },
  { pattern: '/domains', perHour: 100, perMinute: 10 },
  { pattern: '/analytics', perHour: 300, perMinute: 30 },
  { pattern: '/admin/*', perHour: 50, perMinute: 5 },
  { pattern: '/domains/verify', perHour: 100, perMinute: 10 },
  { pattern: '/collections/:id', perHour: 1500, perMinute: 30 },
  { pattern: '/f/:formId', perHour: 3600, perMinute: 60 },
];

/**
 * The table's patterns, most specific first, so that the first match wins: more segments first
 * (`/domains/verify` before `/domains`), then, segment by segment, a literal before a parameter.
 */
const ENDPOINT_MATCHERS = ENDPOINT_LIMITS.map((limit) => ({
  limit,
  regex: prefixRegex(limit.pattern),
  except: (limit.except ?? []).map(prefixRegex),
  segments: segmentsOf(limit.pattern),
})).sort((a, b) => bySpecificity(a.segments, b.segments));

function segmentsOf(pattern: string): string[] {
  return pattern
    .replace(/\/\*$/, '')
    .split('/')
    .filter((part) => part !== '');
}

function bySpecificity(a: string[], b: string[]): number {
  if (a.length !== b.length) return b.length - a.length;
  for (let i = 0; i < a.length; i++) {
    const aParam = a[i].startsWith(':');
    const bParam = b[i].startsWith(':');
    if (aParam !== bParam) return aParam ? 1 : -1;
  }
  return 0;
}

/** A pattern's path and every path below it (a whole segment at a time: `/domains` never matches `/domainsx`). */
function prefixRegex(pattern: string): RegExp {
  const body = segmentsOf(pattern)
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^/${body}(?:/.*)?$`, 'i');
}

/** The endpoint limit of a request path: the most specific pattern that covers it, if any. */
export function endpointLimitOf(path: string): EndpointLimit | null {
  const match = ENDPOINT_MATCHERS.find((m) => m.regex.test(path) && !m.except.some((regex) => regex.test(path)));
  return match?.limit ?? null;
}

/** Health, metrics and docs are never limited (D-11). */
export function isUnlimitedPath(path: string): boolean {
  return /^\/(health|metrics|docs|docs-json|docs-yaml)(\/|$)/i.test(path);
}

/**
 * Open routes with limits of their own, decided before the body is read: form posts without a credential (a
 * generous per-IP limit, then each form's own once the form is known), the tracking links (per IP, generously: a
 * mail client fetches a message's images at once) and the provider's signed events (only an IP that spent its
 * failure budget on bad signatures is refused: a provider posts bursts from a few addresses).
 */
export type OpenRoute = 'form-post' | 'tracking' | 'provider-events';

/** The open route a request goes to (by method and path alone), or null for every other route. */
export function openRouteOf(method: string, path: string): OpenRoute | null {
  if (/^\/[tu]\//i.test(path)) return 'tracking';
  if (/^\/provider\/events\/?$/i.test(path)) return 'provider-events';
  return isAnonymousFormPost(method, path) ? 'form-post' : null;
}

/** The per-minute limit of a client IP on the form or tracking routes, counted before the body is read. */
export function openRouteIpRule(route: 'form-post' | 'tracking', ip: string, perMinute: number, redisKey: RedisKey): LimitRule {
  return {
    scope: 'ip',
    window: 'minute',
    kind: 'window',
    key: redisKey('rl', route, clientIpKey(ip), 'm'),
    limit: perMinute,
    windowMs: MINUTE_MS,
  };
}

/** Whether the limiter counts a request at all: neither CORS preflights nor the unlimited paths are. */
export function isRateLimited(method: string, path: string): boolean {
  return method.toUpperCase() !== 'OPTIONS' && !isUnlimitedPath(path);
}

/** Form posts: `/{domain}/{form}` (a name with a dot), `/v1/{domain}/send`, `/submit/{form}`, `/f/…`, `/c/…/…`. */
const FORM_POST_PATH = /^\/(?:[^/]*\.[^/]*\/[^/]+|v1\/[^/]+\/send|submit\/[^/]+|f\/[^/]+(?:\/[^/]+)?|c\/[^/]+\/[^/]+)\/?$/i;

/** Submissions per hour per client IP of a form without its own rateLimit (spec "Form submission limits"). */
export const DEFAULT_FORM_RATE_LIMIT = 10;

/**
 * A post to a form without a credential: the form's own per-IP limit replaces the IP and endpoint limits
 * (D-11). The submission pipeline applies it once it knows the form; before the body is read the limiter
 * counts only the generous per-IP limit of every form post (openRouteIpRule).
 */
export function isAnonymousFormPost(method: string, path: string): boolean {
  return method === 'POST' && FORM_POST_PATH.test(path);
}

/** The per-IP limit of one form. */
export function formIpRule(formId: string, ip: string, perHour: number, redisKey: RedisKey): LimitRule {
  return {
    scope: 'ip',
    window: 'hour',
    kind: 'window',
    key: redisKey('rl', 'form', formId, clientIpKey(ip), 'h'),
    limit: perHour,
    windowMs: HOUR_MS,
  };
}

/**
 * Confirmation emails of instant forms an account may have sent per hour, whatever its plan: each goes from
 * the operator's address to an address the tenant names, so it is the operator's reputation that pays.
 */
export const CONFIRMATION_EMAILS_PER_HOUR = 50;

/** The hourly cap on an account's confirmation emails; a request costs one per confirmation email. */
export function confirmationEmailsRule(accountId: string, redisKey: RedisKey): LimitRule {
  return {
    scope: 'account',
    window: 'hour',
    kind: 'window',
    key: redisKey('rl', 'confirmations', accountId, 'h'),
    limit: CONFIRMATION_EMAILS_PER_HOUR,
    windowMs: HOUR_MS,
  };
}

/**
 * The 429 of the confirmation cap (D-10, D-12): the refusing counter's state in `details` and in the
 * X-RateLimit-* headers, with Retry-After. A request is refused whole: nothing of it was counted.
 */
export function confirmationCapRefusal(state: LimitState, requested: number): AppException {
  const retryAfter = String(Math.max(1, Math.ceil(state.retryAfterMs / 1000)));
  const { limit } = state.rule;
  return new AppException(
    ErrorCode.RateLimitExceeded,
    `Confirmation emails: an account may send ${limit} an hour; ${state.remaining} left, this request needs ${requested}; ` +
      `retry in ${retryAfter} s`,
    {
      limit,
      remaining: state.remaining,
      reset_time: new Date(state.resetAtMs).toISOString(),
      retry_after: Number(retryAfter),
      scope: state.rule.scope,
      window: state.rule.window,
      requested,
    },
    {
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(state.remaining),
      'X-RateLimit-Reset': String(Math.ceil(state.resetAtMs / 1000)),
      'X-RateLimit-Scope': state.rule.scope,
      'X-RateLimit-RetryAfter': retryAfter,
      'Retry-After': retryAfter,
    },
  );
}

/** The rate-limit routes report without counting, so a limited caller can still ask when to come back. */
export function isStatusPath(path: string): boolean {
  return /^\/rate-limits(\/status)?\/?$/i.test(path);
}

/** settings.limits of an account, keeping only positive integers (operators write it by hand). */
export function parsePlanLimits(raw: unknown): PlanLimits {
  const limits: PlanLimits = {};
  if (!raw || typeof raw !== 'object') return limits;
  for (const name of ['requests_per_hour', 'requests_per_minute', 'burst'] as const) {
    const value = (raw as Record<string, unknown>)[name];
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) limits[name] = value;
  }
  return limits;
}

/** The plan's limits with the account's own settings.limits laid over them, field by field. */
export function accountLimits(tier: AccountTier, overrides: PlanLimits): PlanLimits {
  return { ...PLAN_LIMITS[tier], ...overrides };
}

export type KeyLimitFields = Pick<AuthContext, 'rateLimit' | 'restrictions'>;

/**
 * A key's own limits: restrictions.rate_limit (else the key's rateLimit) per hour and burst_limit per
 * minute, scaled by restrictions.multiplier; none when restrictions.exempt. A key whose rateLimit is null
 * (and without rate_limit) has no hourly limit of its own: its account's and the endpoint's still apply.
 */
export function keyLimits(key: KeyLimitFields): { perHour: number | null; perMinute: number | null } {
  const { restrictions } = key;
  if (restrictions.exempt) return { perHour: null, perMinute: null };
  const multiplier = restrictions.multiplier ?? 1;
  const scale = (limit: number) => Math.max(1, Math.floor(limit * multiplier));
  const perHour = restrictions.rate_limit ?? key.rateLimit;
  return {
    perHour: perHour === null ? null : scale(perHour),
    perMinute: restrictions.burst_limit ? scale(restrictions.burst_limit) : null,
  };
}

export type Caller =
  | { kind: 'key'; auth: Pick<AuthContext, 'keyId' | 'accountId' | 'rateLimit' | 'restrictions'>; account: PlanLimits }
  /** failedAuth: the request presented a malformed or unknown key. formPost: see isAnonymousFormPost. */
  | { kind: 'anonymous'; ip: string; failedAuth?: boolean; formPost?: boolean };

type RedisKey = (...parts: string[]) => string;

/** Every limit a request falls under: the key's and the account's, or the client IP's; and the endpoint's. */
export function rulesFor(caller: Caller, endpoint: EndpointLimit | null, redisKey: RedisKey): LimitRule[] {
  const rules: LimitRule[] = [];
  const window = (
    scope: LimitRule['scope'],
    id: string[],
    perHour: number | null | undefined,
    perMinute: number | null | undefined,
    endpoint?: string,
  ) => {
    const extra = endpoint ? { endpoint } : {};
    if (perHour) {
      rules.push({ scope, window: 'hour', kind: 'window', key: redisKey('rl', ...id, 'h'), limit: perHour, windowMs: HOUR_MS, ...extra });
    }
    if (perMinute) {
      rules.push({
        scope,
        window: 'minute',
        kind: 'window',
        key: redisKey('rl', ...id, 'm'),
        limit: perMinute,
        windowMs: MINUTE_MS,
        ...extra,
      });
    }
  };

  let endpointCounter: string;
  if (caller.kind === 'key') {
    const own = keyLimits(caller.auth);
    window('api-key', ['key', caller.auth.keyId], own.perHour, own.perMinute);
    const { requests_per_hour, requests_per_minute, burst } = caller.account;
    window('account', ['acct', caller.auth.accountId], requests_per_hour, requests_per_minute);
    if (burst) {
      rules.push({
        scope: 'account',
        window: 'burst',
        kind: 'bucket',
        key: redisKey('rl', 'acct', caller.auth.accountId, 'b'),
        limit: burst,
        refillPerMinute: requests_per_minute ?? burst,
      });
    }
    endpointCounter = `acct:${caller.auth.accountId}`;
  } else {
    const ip = clientIpKey(caller.ip);
    if (!caller.formPost) window('ip', ['ip', ip], IP_LIMITS.perHour, IP_LIMITS.perMinute);
    if (caller.failedAuth) rules.push(authFailureRule(caller.ip, redisKey));
    if (caller.formPost) return rules;
    endpointCounter = `ip:${ip}`;
  }
  if (endpoint) window('endpoint', ['ep', endpoint.pattern, endpointCounter], endpoint.perHour, endpoint.perMinute, endpoint.pattern);
  return rules;
}

/** The failed-authentication budget of a client IP. */
export function authFailureRule(ip: string, redisKey: RedisKey): LimitRule {
  return {
    scope: 'ip',
    window: 'minute',
    kind: 'window',
    key: redisKey('rl', 'authfail', clientIpKey(ip), 'm'),
    limit: AUTH_FAILURE_LIMIT.perMinute,
    windowMs: MINUTE_MS,
  };
}

/**
 * A rule as one process enforces it alone while Redis is away: `share` of the limit (at least 1), and of a
 * bucket's refill rate.
 */
export function fallbackRule(rule: LimitRule, share: number): LimitRule {
  const limit = Math.max(1, Math.floor(rule.limit * share));
  if (rule.kind === 'bucket') return { ...rule, limit, refillPerMinute: Math.max(1, rule.refillPerMinute * share) };
  return { ...rule, limit };
}

/** IPv6 clients are counted by /64 (one host usually holds a whole /64); IPv4-mapped IPv6 as IPv4. */
export function clientIpKey(ip: string): string {
  const plain = ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
  return normalizeIp(plain);
}
