import { ErrorCode } from '../common/errors/error-code';
import {
  allCounterKeys,
  fits,
  freeMonthlyEmails,
  parseGlobalLimits,
  parseSettingsQuotas,
  QuotaAccount,
  quotaLimits,
  refusalOf,
  refusingRule,
  reservationRules,
  usedIn,
  windowOf,
} from './quota-policy';

const redisKey = (...parts: string[]) => `p:${parts.join(':')}`;
const NOW = Date.UTC(2026, 10, 23, 14, 25, 30); // 2026-11-23T14:25:30Z
const HOUR = 3_600_000;

function account(overrides: Partial<QuotaAccount> = {}): QuotaAccount {
  return { tier: 'free', createdAt: new Date(Date.UTC(2025, 0, 5)), isOperator: false, quotas: {}, globalLimits: {}, ...overrides };
}

const NO_LIMITS = {
  emails_per_month: null,
  forwards_per_month: null,
  form_submissions_per_hour: null,
  form_submissions_per_day: null,
  global_hourly: null,
  global_daily: null,
  global_monthly: null,
};

describe('quota policy (D-13)', () => {
  describe('windows', () => {
    it('are UTC calendar hours, days and months, named in the counter keys', () => {
      expect(windowOf('hour', NOW)).toEqual({ startMs: Date.UTC(2026, 10, 23, 14), endMs: Date.UTC(2026, 10, 23, 15), id: 'h2026112314' });
      expect(windowOf('day', NOW)).toEqual({ startMs: Date.UTC(2026, 10, 23), endMs: Date.UTC(2026, 10, 24), id: 'd20261123' });
      expect(windowOf('month', NOW)).toEqual({ startMs: Date.UTC(2026, 10, 1), endMs: Date.UTC(2026, 11, 1), id: 'm202611' });
    });

    it('roll over at the end of a day, a month and a year', () => {
      const lastMs = Date.UTC(2026, 11, 31, 23, 59, 59, 999);
      expect(windowOf('hour', lastMs).endMs).toBe(Date.UTC(2027, 0, 1));
      expect(windowOf('day', lastMs).endMs).toBe(Date.UTC(2027, 0, 1));
      expect(windowOf('month', lastMs)).toEqual({ startMs: Date.UTC(2026, 11, 1), endMs: Date.UTC(2027, 0, 1), id: 'm202612' });
      expect(windowOf('month', lastMs + 1).id).toBe('m202701');
      expect(windowOf('day', Date.UTC(2028, 1, 28, 12)).endMs).toBe(Date.UTC(2028, 1, 29)); // leap year
    });
  });

  describe('limits by tier', () => {
    it('gives Free 360 emails in the calendar month it was created in, 180 in every later one', () => {
      expect(freeMonthlyEmails(new Date(Date.UTC(2026, 10, 1)), new Date(NOW))).toBe(360);
      expect(freeMonthlyEmails(new Date(Date.UTC(2026, 9, 31, 23, 59)), new Date(NOW))).toBe(180);
      expect(freeMonthlyEmails(new Date(Date.UTC(2025, 10, 23)), new Date(NOW))).toBe(180); // same month a year before
      expect(quotaLimits(account({ createdAt: new Date(NOW - HOUR) }), new Date(NOW))).toEqual({
        ...NO_LIMITS,
        emails_per_month: 360,
        forwards_per_month: 500,
        form_submissions_per_hour: 100,
        form_submissions_per_day: 1000,
      });
      expect(quotaLimits(account(), new Date(NOW)).emails_per_month).toBe(180);
    });

    it('gives Pro no email stop (overage), 50000 forwards and 2000/20000 form submissions; enterprise nothing until set', () => {
      expect(quotaLimits(account({ tier: 'pro' }), new Date(NOW))).toEqual({
        ...NO_LIMITS,
        forwards_per_month: 50_000,
        form_submissions_per_hour: 2000,
        form_submissions_per_day: 20_000,
      });
      expect(quotaLimits(account({ tier: 'enterprise' }), new Date(NOW))).toEqual(NO_LIMITS);
      expect(
        quotaLimits(
          account({ tier: 'enterprise', quotas: { emails_per_month: 5000, forwards_per_month: 70, form_submissions_per_hour: 3 } }),
          new Date(NOW),
        ),
      ).toEqual({
        ...NO_LIMITS,
        emails_per_month: 5000,
        forwards_per_month: 70,
        form_submissions_per_hour: 3,
      });
    });

    it('lays settings.quotas over the tier field by field, adds global_limits, and gives the operator no plan quotas', () => {
      expect(
        quotaLimits(account({ quotas: { form_submissions_per_day: 5 }, globalLimits: { hourly: 7, monthly: 9 } }), new Date(NOW)),
      ).toEqual({
        emails_per_month: 180,
        forwards_per_month: 500,
        form_submissions_per_hour: 100,
        form_submissions_per_day: 5,
        global_hourly: 7,
        global_daily: null,
        global_monthly: 9,
      });
      expect(quotaLimits(account({ isOperator: true, tier: 'free', globalLimits: { daily: 50 } }), new Date(NOW))).toEqual({
        ...NO_LIMITS,
        global_daily: 50,
      });
    });

    it('lets settings.quotas set forwards_per_month on any tier, apart from emails_per_month', () => {
      const free = quotaLimits(account({ quotas: { forwards_per_month: 2 } }), new Date(NOW));
      expect([free.emails_per_month, free.forwards_per_month]).toEqual([180, 2]);
      const pro = quotaLimits(account({ tier: 'pro', quotas: { forwards_per_month: 1_000_000 } }), new Date(NOW));
      expect([pro.emails_per_month, pro.forwards_per_month]).toEqual([null, 1_000_000]);
      // The operator's account runs the installation: its forwarding is never stopped by a plan quota.
      expect(quotaLimits(account({ isOperator: true }), new Date(NOW)).forwards_per_month).toBeNull();
    });

    it('reads only positive integers from settings (operators may write them by hand)', () => {
      expect(parseSettingsQuotas({ emails_per_month: 10, form_submissions_per_hour: 0, form_submissions_per_day: '5', other: 3 })).toEqual({
        emails_per_month: 10,
      });
      expect(parseSettingsQuotas({ forwards_per_month: 25 })).toEqual({ forwards_per_month: 25 });
      expect(parseSettingsQuotas({ forwards_per_month: -1 })).toEqual({});
      expect(parseGlobalLimits({ hourly: 1.5, daily: -1, monthly: 2_000_000_000 })).toEqual({});
      expect(parseGlobalLimits({ hourly: 3, daily: 4, monthly: 5 })).toEqual({ hourly: 3, daily: 4, monthly: 5 });
      expect(parseGlobalLimits(null)).toEqual({});
      expect(parseGlobalLimits([1])).toEqual({});
    });
  });

  describe('reservation rules', () => {
    const limits = {
      ...NO_LIMITS,
      emails_per_month: 180,
      forwards_per_month: 500,
      form_submissions_per_hour: 100,
      form_submissions_per_day: 1000,
      global_hourly: 50,
    };

    it('checks an email send against the email and global quotas only, costing one per recipient', () => {
      const rules = reservationRules('acc_1', limits, { emails: 3, submissions: 0 }, NOW, 300_000, redisKey);
      expect(rules.map((r) => [r.quota.name, r.key, r.cost, r.limit])).toEqual([
        ['emails_per_month', 'p:quota:acc_1:emails:m202611', 3, 180],
        ['global_hourly', 'p:quota:acc_1:units:h2026112314', 3, 50],
      ]);
    });

    it('checks a form submission against the submission and global quotas; spam (cost 0) against nothing', () => {
      const rules = reservationRules('acc_1', limits, { emails: 0, submissions: 1 }, NOW, 300_000, redisKey);
      expect(rules.map((r) => [r.quota.name, r.key, r.cost])).toEqual([
        ['form_submissions_per_hour', 'p:quota:acc_1:submissions:h2026112314', 1],
        ['form_submissions_per_day', 'p:quota:acc_1:submissions:d20261123', 1],
        ['global_hourly', 'p:quota:acc_1:units:h2026112314', 1],
      ]);
      expect(reservationRules('acc_1', limits, { emails: 0, submissions: 0 }, NOW, 300_000, redisKey)).toEqual([]);
      expect(reservationRules('acc_1', NO_LIMITS, { emails: 10, submissions: 1 }, NOW, 300_000, redisKey)).toEqual([]);
    });

    it('checks forwarded mail against forwards_per_month only: neither the email quota nor global_limits', () => {
      const rules = reservationRules(
        'acc_1',
        { ...limits, global_daily: 10, global_monthly: 10 },
        { emails: 0, submissions: 0, forwards: 3 },
        NOW,
        300_000,
        redisKey,
      );
      expect(rules.map((r) => [r.quota.name, r.key, r.cost, r.limit])).toEqual([
        ['forwards_per_month', 'p:quota:acc_1:forwards:m202611', 3, 500],
      ]);
      // A send (forwards absent) never touches the forwarding counter.
      expect(reservationRules('acc_1', limits, { emails: 2, submissions: 0 }, NOW, 300_000, redisKey).map((r) => r.quota.name)).toEqual([
        'emails_per_month',
        'global_hourly',
      ]);
      expect(
        reservationRules(
          'acc_1',
          { ...limits, forwards_per_month: null },
          { emails: 0, submissions: 0, forwards: 3 },
          NOW,
          300_000,
          redisKey,
        ),
      ).toEqual([]);
    });

    it('trusts a loaded counter for the sync interval, never much past the end of its window', () => {
      const [month, hour] = reservationRules('acc_1', limits, { emails: 1, submissions: 0 }, NOW, 300_000, redisKey);
      expect(month.ttlMs).toBe(300_000);
      const nearEnd = Date.UTC(2026, 10, 23, 14, 59, 50);
      const [, late] = reservationRules('acc_1', limits, { emails: 1, submissions: 0 }, nearEnd, 300_000, redisKey);
      expect(late.ttlMs).toBe(10_000 + 60_000);
      expect(hour.window.endMs).toBe(Date.UTC(2026, 10, 23, 15));
    });

    it('is all or nothing: the acceptance fits only if every counter takes its whole cost', () => {
      const rules = reservationRules('acc_1', limits, { emails: 3, submissions: 0 }, NOW, 300_000, redisKey);
      expect(fits(rules, [177, 47])).toBe(true);
      expect(fits(rules, [178, 0])).toBe(false); // 2 left, 3 asked
      expect(fits(rules, [0, 48])).toBe(false);
    });

    it('reports the refusing quota that keeps the caller waiting longest, plan quotas first among equals', () => {
      const rules = reservationRules('acc_1', { ...limits, global_monthly: 10 }, { emails: 3, submissions: 0 }, NOW, 300_000, redisKey);
      expect(rules.map((r) => r.quota.name)).toEqual(['emails_per_month', 'global_hourly', 'global_monthly']);
      expect(refusingRule(rules, [0, 48, 0])?.rule.quota.name).toBe('global_hourly');
      expect(refusingRule(rules, [0, 48, 9])?.rule.quota.name).toBe('global_monthly');
      expect(refusingRule(rules, [178, 48, 9])).toEqual({ rule: rules[0], used: 178 });
      expect(refusingRule(rules, [0, 0, 0])).toBeNull();
    });

    it('lists every counter key of an account in the current windows', () => {
      expect(allCounterKeys(redisKey, 'acc_1', NOW)).toEqual([
        'p:quota:acc_1:emails:m202611',
        'p:quota:acc_1:forwards:m202611',
        'p:quota:acc_1:submissions:h2026112314',
        'p:quota:acc_1:submissions:d20261123',
        'p:quota:acc_1:units:h2026112314',
        'p:quota:acc_1:units:d20261123',
        'p:quota:acc_1:units:m202611',
      ]);
    });

    it('counts usage by unit: emails, submissions, forwards, or emails and submissions for global_limits', () => {
      const usage = {
        hour: { emails: 1, submissions: 2, forwards: 4 },
        day: { emails: 10, submissions: 20, forwards: 40 },
        month: { emails: 100, submissions: 200, forwards: 400 },
      };
      expect(usedIn(usage, 'emails', 'month')).toBe(100);
      expect(usedIn(usage, 'submissions', 'day')).toBe(20);
      expect(usedIn(usage, 'forwards', 'month')).toBe(400);
      expect(usedIn(usage, 'units', 'hour')).toBe(3);
    });
  });

  describe('the 429', () => {
    it('names the plan quota, what is left and when it resets (QUOTA_EXCEEDED)', () => {
      const [rule] = reservationRules(
        'acc_1',
        { ...NO_LIMITS, emails_per_month: 180 },
        { emails: 3, submissions: 0 },
        NOW,
        300_000,
        redisKey,
      );
      const refusal = refusalOf(rule, 178, NOW);
      const secondsToMonthEnd = Math.ceil((Date.UTC(2026, 11, 1) - NOW) / 1000);
      expect(refusal).toEqual({
        code: ErrorCode.QuotaExceeded,
        message:
          'Quota exceeded: your plan allows 180 emails per calendar month (2 left, this request needs 3); it resets at 2026-12-01T00:00:00.000Z',
        details: {
          limit: 180,
          remaining: 2,
          reset_time: '2026-12-01T00:00:00.000Z',
          retry_after: secondsToMonthEnd,
          scope: 'account',
          quota: 'emails_per_month',
          window: 'month',
          requested: 3,
        },
        retryAfterSec: secondsToMonthEnd,
      });
    });

    it('names the forwarding quota when forwarded mail is refused', () => {
      const [rule] = reservationRules(
        'acc_1',
        { ...NO_LIMITS, forwards_per_month: 500 },
        { emails: 0, submissions: 0, forwards: 2 },
        NOW,
        300_000,
        redisKey,
      );
      const refusal = refusalOf(rule, 500, NOW);
      expect(refusal.code).toBe(ErrorCode.QuotaExceeded);
      expect(refusal.message).toBe(
        'Quota exceeded: your plan allows 500 forwarded emails per calendar month (0 left, this request needs 2); it resets at 2026-12-01T00:00:00.000Z',
      );
      expect(refusal.details).toMatchObject({ quota: 'forwards_per_month', window: 'month', limit: 500, remaining: 0, requested: 2 });
    });

    it('names global_limits for ACCOUNT_QUOTA_EXCEEDED, never a negative remaining, at least one second to wait', () => {
      const [rule] = reservationRules('acc_1', { ...NO_LIMITS, global_hourly: 5 }, { emails: 0, submissions: 1 }, NOW, 300_000, redisKey);
      const refusal = refusalOf(rule, 9, Date.UTC(2026, 10, 23, 14, 59, 59, 900));
      expect(refusal.code).toBe(ErrorCode.AccountQuotaExceeded);
      expect(refusal.message).toContain("the account's global_limits allow 5 emails and form submissions together per hour");
      expect(refusal.details).toMatchObject({
        limit: 5,
        remaining: 0,
        retry_after: 1,
        quota: 'global_hourly',
        reset_time: '2026-11-23T15:00:00.000Z',
      });
    });
  });
});
