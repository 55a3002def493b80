import { blocking, tightest, tooManyRequests } from './rate-limit.headers';
import { LimitState, MINUTE_MS } from './rate-limit.types';

const state = (scope: LimitState['rule']['scope'], limit: number, remaining: number, retryAfterMs = 0): LimitState => ({
  rule: { scope, window: 'minute', kind: 'window', key: `k:${scope}:${limit}`, limit, windowMs: MINUTE_MS },
  remaining,
  resetAtMs: Date.UTC(2026, 10, 22, 6, 0, 0),
  retryAfterMs,
});

describe('rate-limit headers', () => {
  it('reports the limit with the least remaining, the smaller limit among equals', () => {
    expect(tightest([state('api-key', 1000, 900), state('account', 50, 40), state('endpoint', 5, 4)])?.rule.scope).toBe('endpoint');
    expect(tightest([state('api-key', 10, 3), state('account', 5, 3)])?.rule.scope).toBe('account');
    expect(tightest([])).toBeNull();
  });

  it('blames the refusing rule with the longest wait', () => {
    expect(blocking([state('api-key', 10, 0, 2000), state('account', 50, 0, 9000), state('ip', 60, 5)]).rule.scope).toBe('account');
  });

  it('builds the 429 with the scope’s code, the D-10 details and both retry headers, rounding the wait up', () => {
    const error = tooManyRequests(state('ip', 60, 0, 1200));
    expect(error.status).toBe(429);
    expect(error.code).toBe('IP_RATE_LIMIT');
    expect(error.details).toEqual({
      limit: 60,
      remaining: 0,
      reset_time: '2026-11-22T06:00:00.000Z',
      retry_after: 2,
      scope: 'ip',
      window: 'minute',
    });
    expect(error.headers).toEqual({ 'X-RateLimit-RetryAfter': '2', 'Retry-After': '2' });
    expect(tooManyRequests(state('account', 5, 0, 1)).code).toBe('RATE_LIMIT_EXCEEDED');
    expect(tooManyRequests(state('endpoint', 5, 0, 1)).code).toBe('ENDPOINT_RATE_LIMIT');
    expect(tooManyRequests(state('api-key', 5, 0, 1)).code).toBe('API_KEY_RATE_LIMIT');
  });
});
