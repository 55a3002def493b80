import type { Response } from 'express';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { LimitScope, LimitState } from './rate-limit.types';

const CODE_OF_SCOPE: Record<LimitScope, ErrorCode> = {
  'api-key': ErrorCode.ApiKeyRateLimit,
  ip: ErrorCode.IpRateLimit,
  endpoint: ErrorCode.EndpointRateLimit,
  account: ErrorCode.RateLimitExceeded,
  'smtp-sender': ErrorCode.RateLimitExceeded,
  'smtp-domain': ErrorCode.RateLimitExceeded,
};

const WHO: Record<LimitScope, string> = {
  'api-key': 'this API key',
  ip: 'your IP address',
  endpoint: 'this endpoint',
  account: 'your account’s plan',
  'smtp-sender': 'this sender',
  'smtp-domain': 'this domain',
};

const PER: Record<LimitState['rule']['window'], string> = {
  hour: 'requests per hour',
  minute: 'requests per minute',
  burst: 'requests in a burst',
};

/** The state the headers report: the least remaining; among equals, the smallest limit. */
export function tightest(states: readonly LimitState[]): LimitState | null {
  let best: LimitState | null = null;
  for (const state of states) {
    if (!best || state.remaining < best.remaining || (state.remaining === best.remaining && state.rule.limit < best.rule.limit)) {
      best = state;
    }
  }
  return best;
}

/** The refusing rule that keeps the caller waiting longest: the request passes only when all allow it. */
export function blocking(states: readonly LimitState[]): LimitState {
  return states.filter((s) => s.retryAfterMs > 0).reduce((a, b) => (b.retryAfterMs > a.retryAfterMs ? b : a));
}

export function writeRateLimitHeaders(response: Response, state: LimitState): void {
  response.setHeader('X-RateLimit-Limit', String(state.rule.limit));
  response.setHeader('X-RateLimit-Remaining', String(state.remaining));
  response.setHeader('X-RateLimit-Reset', String(Math.ceil(state.resetAtMs / 1000)));
  response.setHeader('X-RateLimit-Scope', state.rule.scope);
}

/** The 429 (D-10, D-12): the scope's code, the details, and both retry headers. */
export function tooManyRequests(state: LimitState): AppException {
  const retryAfter = String(Math.max(1, Math.ceil(state.retryAfterMs / 1000)));
  const { scope, window, limit } = state.rule;
  return new AppException(
    CODE_OF_SCOPE[scope],
    `Rate limit exceeded: ${WHO[scope]} allows ${limit} ${PER[window]}; retry in ${retryAfter} s`,
    {
      limit,
      remaining: state.remaining,
      reset_time: new Date(state.resetAtMs).toISOString(),
      retry_after: Number(retryAfter),
      scope,
      window,
    },
    { 'X-RateLimit-RetryAfter': retryAfter, 'Retry-After': retryAfter },
  );
}
