import {
  accountLimits,
  clientIpKey,
  CONFIRMATION_EMAILS_PER_HOUR,
  confirmationCapRefusal,
  confirmationEmailsRule,
  endpointLimitOf,
  fallbackRule,
  isRateLimited,
  isStatusPath,
  isUnlimitedPath,
  keyLimits,
  openRouteIpRule,
  openRouteOf,
  parsePlanLimits,
  rulesFor,
} from './rate-limit.policy';

const redisKey = (...parts: string[]) => `p:${parts.join(':')}`;
const key = (restrictions = {}, rateLimit = 1000) => ({ keyId: 'key_1', accountId: 'acc_1', rateLimit, restrictions });

describe('rate-limit policy (D-11)', () => {
  it('matches the endpoint table by prefix, the most specific pattern winning', () => {
    expect(endpointLimitOf('/v1/example.com/send')?.pattern).toBe('/v1/:domain/send');
    expect(endpointLimitOf('/domains/verify')?.pattern).toBe('/domains/verify');
    expect(endpointLimitOf('/domains')?.pattern).toBe('/domains');
    expect(endpointLimitOf('/domains/')?.pattern).toBe('/domains');
    expect(endpointLimitOf('/domains/example.com')?.pattern).toBe('/domains');
    expect(endpointLimitOf('/admin/accounts')?.pattern).toBe('/admin/*');
    expect(endpointLimitOf('/admin')?.pattern).toBe('/admin/*');
    expect(endpointLimitOf('/collections')?.pattern).toBe('/collections');
    expect(endpointLimitOf('/collections/col_1')?.pattern).toBe('/collections/:id');
    expect(endpointLimitOf('/collections/website/forms/signup')?.pattern).toBe('/collections/:id');
    expect(endpointLimitOf('/f/frm_1')?.pattern).toBe('/f/:formId');
    expect(endpointLimitOf('/administrator')).toBeNull();
    expect(endpointLimitOf('/domainsx/verify')).toBeNull();
    expect(endpointLimitOf('/email/send')).toBeNull();
  });

  it('counts /instant/forms/batch and the form reads under /instant/forms, but not the public confirmation link', () => {
    expect(endpointLimitOf('/instant/forms')?.pattern).toBe('/instant/forms');
    expect(endpointLimitOf('/instant/forms/batch')?.pattern).toBe('/instant/forms');
    expect(endpointLimitOf('/Instant/Forms/Batch/')?.pattern).toBe('/instant/forms');
    expect(endpointLimitOf('/instant/forms/frm_1/submissions')?.pattern).toBe('/instant/forms');
    expect(endpointLimitOf('/instant/forms/confirm/abc')).toBeNull();
    expect(endpointLimitOf('/instant/forms/confirm')).toBeNull();
    // One counter for both paths of a caller.
    const caller = { kind: 'key' as const, auth: key(), account: {} };
    const keysOf = (path: string) => rulesFor(caller, endpointLimitOf(path), redisKey).map((r) => r.key);
    expect(keysOf('/instant/forms/batch')).toEqual(keysOf('/instant/forms'));
    expect(keysOf('/instant/forms')).toEqual([
      'p:rl:key:key_1:h',
      'p:rl:ep:/instant/forms:acct:acc_1:h',
      'p:rl:ep:/instant/forms:acct:acc_1:m',
    ]);
  });

  it('caps an account’s confirmation emails at 50 an hour, whatever its plan, with a 429 that says so', () => {
    const rule = confirmationEmailsRule('acc_1', redisKey);
    expect(rule).toEqual({
      scope: 'account',
      window: 'hour',
      kind: 'window',
      key: 'p:rl:confirmations:acc_1:h',
      limit: CONFIRMATION_EMAILS_PER_HOUR,
      windowMs: 3_600_000,
    });
    expect(CONFIRMATION_EMAILS_PER_HOUR).toBe(50);
    const err = confirmationCapRefusal({ rule, remaining: 2, resetAtMs: Date.UTC(2030, 0, 1, 12), retryAfterMs: 1500 }, 3);
    expect([err.status, err.code, err.message]).toEqual([
      429,
      'RATE_LIMIT_EXCEEDED',
      'Confirmation emails: an account may send 50 an hour; 2 left, this request needs 3; retry in 2 s',
    ]);
    expect(err.details).toEqual({
      limit: 50,
      remaining: 2,
      reset_time: '2030-01-01T12:00:00.000Z',
      retry_after: 2,
      scope: 'account',
      window: 'hour',
      requested: 3,
    });
    expect(err.headers).toMatchObject({
      'Retry-After': '2',
      'X-RateLimit-RetryAfter': '2',
      'X-RateLimit-Limit': '50',
      'X-RateLimit-Remaining': '2',
    });
  });

  it('never limits health, metrics and docs', () => {
    for (const path of ['/health', '/health/ready', '/metrics', '/docs', '/docs-json', '/docs/swagger-ui.css']) {
      expect(isUnlimitedPath(path)).toBe(true);
    }
    for (const path of ['/healthy', '/email/send', '/tracking', '/u', '/t/o/abc', '/u/abc', '/provider/events']) {
      expect(isUnlimitedPath(path)).toBe(false);
    }
    expect(isRateLimited('POST', '/email/send')).toBe(true);
    expect(isRateLimited('OPTIONS', '/example.com/contact')).toBe(false);
    expect(isRateLimited('GET', '/health')).toBe(false);
    expect(isStatusPath('/rate-limits')).toBe(true);
    expect(isStatusPath('/rate-limits/status')).toBe(true);
    expect(isStatusPath('/rate-limits/other')).toBe(false);
  });

  it('lays settings.limits over the plan; enterprise is unlimited until set', () => {
    expect(accountLimits('free', {})).toEqual({ requests_per_hour: 1000, requests_per_minute: 50, burst: 100 });
    expect(accountLimits('pro', {})).toEqual({ requests_per_hour: 25_000, requests_per_minute: 500, burst: 1000 });
    expect(accountLimits('enterprise', {})).toEqual({});
    expect(accountLimits('enterprise', parsePlanLimits({ requests_per_minute: 7, burst: 'lots', requests_per_hour: -1 }))).toEqual({
      requests_per_minute: 7,
    });
  });

  it('takes the key’s hourly limit from restrictions.rate_limit, scales by multiplier, drops it when exempt', () => {
    expect(keyLimits(key())).toEqual({ perHour: 1000, perMinute: null });
    expect(keyLimits(key({ rate_limit: 40, burst_limit: 6 }))).toEqual({ perHour: 40, perMinute: 6 });
    expect(keyLimits(key({ rate_limit: 40, burst_limit: 6, multiplier: 2.5 }))).toEqual({ perHour: 100, perMinute: 15 });
    expect(keyLimits(key({ burst_limit: 1, multiplier: 0.01 }))).toEqual({ perHour: 10, perMinute: 1 });
    expect(keyLimits(key({ exempt: true, burst_limit: 6 }))).toEqual({ perHour: null, perMinute: null });
  });

  it('gives a key whose rateLimit is null no hourly limit of its own, but keeps its account’s and the endpoint’s', () => {
    const unbounded = { keyId: 'key_1', accountId: 'acc_1', rateLimit: null, restrictions: {} };
    expect(keyLimits(unbounded)).toEqual({ perHour: null, perMinute: null });
    expect(keyLimits({ ...unbounded, restrictions: { burst_limit: 6, multiplier: 2 } })).toEqual({ perHour: null, perMinute: 12 });
    expect(keyLimits({ ...unbounded, restrictions: { rate_limit: 40 } })).toEqual({ perHour: 40, perMinute: null });
    const rules = rulesFor({ kind: 'key', auth: unbounded, account: accountLimits('free', {}) }, endpointLimitOf('/domains'), redisKey);
    expect(rules.map((r) => [r.scope, r.window, r.limit])).toEqual([
      ['account', 'hour', 1000],
      ['account', 'minute', 50],
      ['account', 'burst', 100],
      ['endpoint', 'hour', 100],
      ['endpoint', 'minute', 10],
    ]);
  });

  it('gives a key its own, its account’s and the endpoint’s limits', () => {
    const rules = rulesFor(
      { kind: 'key', auth: key({ burst_limit: 6 }), account: accountLimits('free', {}) },
      endpointLimitOf('/domains'),
      redisKey,
    );
    expect(rules.map((r) => [r.scope, r.window, r.limit, r.key])).toEqual([
      ['api-key', 'hour', 1000, 'p:rl:key:key_1:h'],
      ['api-key', 'minute', 6, 'p:rl:key:key_1:m'],
      ['account', 'hour', 1000, 'p:rl:acct:acc_1:h'],
      ['account', 'minute', 50, 'p:rl:acct:acc_1:m'],
      ['account', 'burst', 100, 'p:rl:acct:acc_1:b'],
      ['endpoint', 'hour', 100, 'p:rl:ep:/domains:acct:acc_1:h'],
      ['endpoint', 'minute', 10, 'p:rl:ep:/domains:acct:acc_1:m'],
    ]);
    expect(rules.find((r) => r.window === 'burst')).toMatchObject({ kind: 'bucket', refillPerMinute: 50 });
  });

  it('limits a call without a credential by client IP, IPv6 by /64', () => {
    const rules = rulesFor({ kind: 'anonymous', ip: '2001:db8:1:2:3:4:5:6' }, endpointLimitOf('/f/frm_1'), redisKey);
    expect(rules.map((r) => [r.scope, r.window, r.limit, r.key])).toEqual([
      ['ip', 'hour', 300, 'p:rl:ip:2001:db8:1:2::/64:h'],
      ['ip', 'minute', 60, 'p:rl:ip:2001:db8:1:2::/64:m'],
      ['endpoint', 'hour', 3600, 'p:rl:ep:/f/:formId:ip:2001:db8:1:2::/64:h'],
      ['endpoint', 'minute', 60, 'p:rl:ep:/f/:formId:ip:2001:db8:1:2::/64:m'],
    ]);
    expect(clientIpKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
  });

  it('adds the failed-authentication budget (30 a minute) when the call presented a bad key', () => {
    const rules = rulesFor({ kind: 'anonymous', ip: '::ffff:203.0.113.9', failedAuth: true }, null, redisKey);
    expect(rules.map((r) => [r.scope, r.window, r.limit, r.key])).toEqual([
      ['ip', 'hour', 300, 'p:rl:ip:203.0.113.9:h'],
      ['ip', 'minute', 60, 'p:rl:ip:203.0.113.9:m'],
      ['ip', 'minute', 30, 'p:rl:authfail:203.0.113.9:m'],
    ]);
  });

  it('sorts out the open routes, whose limits are decided before their body is read', () => {
    expect(openRouteOf('GET', '/t/o/abc')).toBe('tracking');
    expect(openRouteOf('POST', '/u/abc')).toBe('tracking');
    expect(openRouteOf('POST', '/Provider/Events/')).toBe('provider-events');
    for (const path of ['/acme.test/contact', '/f/frm_1', '/submit/frm_1', '/c/col/form', '/v1/acme.test/send']) {
      expect(openRouteOf('POST', path)).toBe('form-post');
    }
    expect(openRouteOf('GET', '/f/frm_1')).toBeNull();
    expect(openRouteOf('POST', '/email/send')).toBeNull();
    expect(openRouteOf('GET', '/instant/forms/confirm/tok')).toBeNull(); // the client IP's ordinary limits hold it
    const rule = openRouteIpRule('form-post', '2001:db8:1:2:3:4:5:6', 120, redisKey);
    expect([rule.scope, rule.window, rule.limit, rule.key]).toEqual(['ip', 'minute', 120, 'p:rl:form-post:2001:db8:1:2::/64:m']);
    expect(openRouteIpRule('tracking', '203.0.113.9', 600, redisKey).key).toBe('p:rl:tracking:203.0.113.9:m');
  });

  it('gives each process its share of a limit while Redis is away, at least 1', () => {
    const [hour] = rulesFor({ kind: 'anonymous', ip: '203.0.113.9' }, null, redisKey);
    expect(fallbackRule(hour, 0.5)).toEqual({ ...hour, limit: 150 });
    expect(fallbackRule({ ...hour, limit: 1 }, 0.5).limit).toBe(1);
    const bucket = rulesFor({ kind: 'key', auth: key(), account: accountLimits('free', {}) }, null, redisKey).find(
      (r) => r.kind === 'bucket',
    )!;
    expect(fallbackRule(bucket, 0.25)).toEqual({ ...bucket, limit: 25, refillPerMinute: 12.5 });
  });
});
