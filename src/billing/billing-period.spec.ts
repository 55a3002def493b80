import type { AccountTier } from '../config/app-config.service';
import { allowanceUsedCents, type BillingPeriod, billingPeriodOf, type HourEmails, type PlanChange, proRataCents } from './billing-period';
import { type BillingTerms, termsOf } from './billing-terms';
import { PlanCatalog } from './plans';

// November 2026: 30 days, 2,592,000 seconds. Starter 10.00 / 10,000 emails, developer 25.00 / 50,000, scale
// 90.00 / 250,000, overage 1.00 per 1,000 (the built-in catalog).
describe('billing period', () => {
  const catalog = new PlanCatalog();
  const lastYear = new Date('2025-05-01T00:00:00Z');
  const now = new Date('2026-11-30T18:00:00Z');
  const start = new Date('2026-11-01T00:00:00Z');
  const end = new Date('2026-12-01T00:00:00Z');

  const subscribed = (plan: string): BillingTerms =>
    termsOf({ tier: 'pro', accountCreatedAt: lastYear, subscription: { plan, status: 'active' }, catalog, now });
  const unsubscribed = (tier: AccountTier, status: 'canceled' | 'none' = 'canceled'): BillingTerms =>
    termsOf({ tier, accountCreatedAt: lastYear, subscription: status === 'none' ? null : { plan: 'starter', status }, catalog, now });
  const change = (
    at: string,
    plan: string | null,
    hourEmailsBefore = 0,
    tiers: [AccountTier, AccountTier] = ['pro', 'pro'],
  ): PlanChange => ({
    at: new Date(at),
    plan,
    tierBefore: tiers[0],
    tierAfter: tiers[1],
    hourEmailsBefore,
  });
  const hour = (at: string, emails: number): HourEmails => ({ hour: new Date(at), emails });
  const periodOf = (current: BillingTerms, changes: PlanChange[], hours: HourEmails[]): BillingPeriod =>
    billingPeriodOf({ now, current, accountCreatedAt: lastYear, catalog, changes, hours });
  const line = (plan: string, from: string | Date, to: string | Date, numbers: Partial<BillingPeriod['lines'][number]>) => ({
    plan,
    from: new Date(from),
    to: new Date(to),
    feeCents: 0,
    emailsSent: 0,
    overage: 0,
    overageCostCents: 0,
    ...numbers,
  });

  // Subscribed to starter in October, nothing since.
  const starterSinceOctober = change('2026-10-05T08:00:00Z', 'starter', 0, ['free', 'pro']);

  describe('without a plan change in the month: one line, the numbers of the whole month as before', () => {
    it('bills the whole fee and the overage beyond the included emails', () => {
      expect(periodOf(subscribed('starter'), [starterSinceOctober], [hour('2026-11-10T09:00:00Z', 11_500)])).toEqual({
        start,
        end,
        emailsSent: 11_500,
        emailsIncluded: 10_000,
        overage: 1500,
        overageCostCents: 150,
        feesCents: 1000,
        lines: [
          line('starter', start, end, { feeCents: 1000, emailsSent: 11_500, emailsIncluded: 10_000, overage: 1500, overageCostCents: 150 }),
        ],
      });
      const period = (emails: number) => periodOf(subscribed('starter'), [starterSinceOctober], [hour('2026-11-10T09:00:00Z', emails)]);
      expect(period(10_000)).toMatchObject({ overage: 0, overageCostCents: 0 });
      expect(period(10_001)).toMatchObject({ overage: 1, overageCostCents: 0 });
      expect(period(10_005)).toMatchObject({ overage: 5, overageCostCents: 1 });
      expect(period(1_010_000)).toMatchObject({ overage: 1_000_000, overageCostCents: 100_000 });
    });

    it('takes the current terms when the account never subscribed: Free overage counted, not charged; a granted tier none', () => {
      const free = periodOf(unsubscribed('free', 'none'), [], [hour('2026-11-02T10:00:00Z', 120), hour('2026-11-03T10:00:00Z', 80)]);
      expect(free).toMatchObject({ emailsSent: 200, emailsIncluded: 180, overage: 20, overageCostCents: 0, feesCents: 0 });
      expect(free.lines).toEqual([line('free', start, end, { emailsSent: 200, emailsIncluded: 180, overage: 20 })]);
      const granted = periodOf(unsubscribed('pro', 'none'), [], [hour('2026-11-02T10:00:00Z', 5_000_000)]);
      expect(granted.lines).toEqual([line('pro', start, end, { emailsSent: 5_000_000, emailsIncluded: null })]);
    });

    it('leaves out the hours of other months and reads a change at the month’s start as its opening state', () => {
      const period = periodOf(
        subscribed('developer'),
        [change('2026-11-01T00:00:00Z', 'developer')],
        [hour('2026-10-31T23:00:00Z', 999), hour('2026-11-01T00:00:00Z', 7), hour('2026-12-01T00:00:00Z', 999)],
      );
      expect(period.lines).toEqual([line('developer', start, end, { feeCents: 2500, emailsSent: 7, emailsIncluded: 50_000 })]);
    });
  });

  it('keeps the starter overage of a cancel on the last day, and bills the fee up to the cancel', () => {
    // 10,455 emails under starter, canceled on November 30 at 12:00: 29.5 days of 30.
    const period = periodOf(
      unsubscribed('free'),
      [starterSinceOctober, change('2026-11-30T12:00:00Z', null, 0, ['pro', 'free'])],
      [hour('2026-11-10T09:00:00Z', 10_000), hour('2026-11-30T11:00:00Z', 455)],
    );
    expect(period.lines).toEqual([
      // 10.00 × 2,548,800 / 2,592,000 = 9.83 of the month, but the whole allowance used: 10.00; 455 over → 0.455 → 0.46.
      line('starter', start, '2026-11-30T12:00:00Z', {
        feeCents: 1000,
        emailsSent: 10_455,
        emailsIncluded: 10_000,
        overage: 455,
        overageCostCents: 46,
      }),
      line('free', '2026-11-30T12:00:00Z', end, { emailsSent: 0, emailsIncluded: 180 }),
    ]);
    expect(period).toMatchObject({ emailsSent: 10_455, emailsIncluded: 180, overage: 455, overageCostCents: 46, feesCents: 1000 });
  });

  it('keeps the starter overage of an upgrade on the last day; the larger plan bills from the upgrade on', () => {
    const period = periodOf(
      subscribed('scale'),
      [starterSinceOctober, change('2026-11-30T12:00:00Z', 'scale')],
      [hour('2026-11-10T09:00:00Z', 10_000), hour('2026-11-30T11:00:00Z', 455), hour('2026-11-30T15:00:00Z', 1000)],
    );
    expect(period.lines).toEqual([
      line('starter', start, '2026-11-30T12:00:00Z', {
        feeCents: 1000,
        emailsSent: 10_455,
        emailsIncluded: 10_000,
        overage: 455,
        overageCostCents: 46,
      }),
      // 90.00 × 43,200 / 2,592,000 = 1.50, more than the 1,000 of 250,000 included used (0.36); 11,455 is far below 250,000.
      line('scale', '2026-11-30T12:00:00Z', end, { feeCents: 150, emailsSent: 1000, emailsIncluded: 250_000 }),
    ]);
    expect(period).toMatchObject({ emailsSent: 11_455, emailsIncluded: 250_000, overage: 455, overageCostCents: 46, feesCents: 1150 });
  });

  it('counts the Free emails before a mid-month subscription against the plan, as the month counts them', () => {
    // Never subscribed before; 300 emails on Free (180 included), starter from November 16, then 10,200 more.
    const period = periodOf(
      subscribed('starter'),
      [change('2026-11-16T00:00:00Z', 'starter', 0, ['free', 'pro'])],
      [hour('2026-11-03T10:00:00Z', 150), hour('2026-11-14T08:00:00Z', 150), hour('2026-11-20T09:00:00Z', 10_200)],
    );
    expect(period.lines).toEqual([
      line('free', start, '2026-11-16T00:00:00Z', { emailsSent: 300, emailsIncluded: 180, overage: 120 }),
      // Half the month is 5.00, but 9,700 of the 10,000 included used: 9.70. From 300 to 10,500 with 10,000 included:
      // 500 over, as the whole month was before.
      line('starter', '2026-11-16T00:00:00Z', end, {
        feeCents: 970,
        emailsSent: 10_200,
        emailsIncluded: 10_000,
        overage: 500,
        overageCostCents: 50,
      }),
    ]);
    expect(period).toMatchObject({ emailsSent: 10_500, overage: 620, overageCostCents: 50, feesCents: 970 });
  });

  it('bills every email after a downgrade below the month’s total as overage of the smaller plan', () => {
    // Developer since October, 30,000 emails, starter from November 20, then 2,000 more.
    const period = periodOf(
      subscribed('starter'),
      [change('2026-10-05T08:00:00Z', 'developer'), change('2026-11-20T00:00:00Z', 'starter')],
      [hour('2026-11-05T12:00:00Z', 30_000), hour('2026-11-25T12:00:00Z', 2000)],
    );
    expect(period.lines).toEqual([
      // 25.00 × 19 / 30 = 15.8333 → 15.83.
      line('developer', start, '2026-11-20T00:00:00Z', { feeCents: 1583, emailsSent: 30_000, emailsIncluded: 50_000 }),
      // 10.00 × 11 / 30 = 3.6667 → 3.67; the running total was past 10,000 already: all 2,000 over.
      line('starter', '2026-11-20T00:00:00Z', end, {
        feeCents: 367,
        emailsSent: 2000,
        emailsIncluded: 10_000,
        overage: 2000,
        overageCostCents: 200,
      }),
    ]);
    expect(period).toMatchObject({ emailsSent: 32_000, overage: 2000, overageCostCents: 200, feesCents: 1950 });
  });

  it('splits the hour of two changes by the emails each saw', () => {
    // Starter; 9,990 emails before November 30 10:00, then 100 in that hour: 40 before the upgrade at 10:15, 70
    // before the cancel at 10:45.
    const period = periodOf(
      unsubscribed('free'),
      [starterSinceOctober, change('2026-11-30T10:15:00Z', 'developer', 40), change('2026-11-30T10:45:00Z', null, 70, ['pro', 'free'])],
      [hour('2026-11-10T09:00:00Z', 9990), hour('2026-11-30T10:00:00Z', 100)],
    );
    expect(period.lines).toEqual([
      // 10.00 × 2,542,500 / 2,592,000 = 9.81 of the month, but the whole allowance used: 10.00.
      line('starter', start, '2026-11-30T10:15:00Z', {
        feeCents: 1000,
        emailsSent: 10_030,
        emailsIncluded: 10_000,
        overage: 30,
        overageCostCents: 3,
      }),
      // 25.00 × 1,800 / 2,592,000 = 0.0174 → 0.02.
      line('developer', '2026-11-30T10:15:00Z', '2026-11-30T10:45:00Z', { feeCents: 2, emailsSent: 30, emailsIncluded: 50_000 }),
      line('free', '2026-11-30T10:45:00Z', end, { emailsSent: 30, emailsIncluded: 180, overage: 30 }),
    ]);
    expect(period).toMatchObject({ emailsSent: 10_090, overage: 60, overageCostCents: 3, feesCents: 1002 });
  });

  it('never adds up allowances by cancelling and subscribing again', () => {
    const period = periodOf(
      subscribed('starter'),
      [
        starterSinceOctober,
        change('2026-11-10T00:00:00Z', null, 0, ['pro', 'free']),
        change('2026-11-10T00:05:00Z', 'starter', 0, ['free', 'pro']),
      ],
      [hour('2026-11-05T12:00:00Z', 9000), hour('2026-11-20T12:00:00Z', 3000)],
    );
    expect(period.lines.map(({ plan, emailsSent, overage }) => [plan, emailsSent, overage])).toEqual([
      ['starter', 9000, 0],
      ['free', 0, 0],
      ['starter', 3000, 2000],
    ]);
  });

  it('gives a change’s hour no more than it holds when a credit took emails off it since', () => {
    const period = periodOf(
      subscribed('developer'),
      [starterSinceOctober, change('2026-11-12T10:30:00Z', 'developer', 40)],
      [hour('2026-11-10T09:00:00Z', 10_000), hour('2026-11-12T10:00:00Z', 25)],
    );
    expect(period.lines.map(({ emailsSent, overage }) => [emailsSent, overage])).toEqual([
      [10_025, 25],
      [0, 0],
    ]);
  });

  it('does not bill a closed part whose plan the catalog no longer has, nor one of a tier granted outside billing', () => {
    const period = periodOf(
      subscribed('starter'),
      [
        change('2026-10-05T08:00:00Z', 'legacy'),
        change('2026-11-16T00:00:00Z', null, 0, ['pro', 'pro']),
        change('2026-11-21T00:00:00Z', 'starter'),
      ],
      [hour('2026-11-10T09:00:00Z', 20_000)],
    );
    expect(period.lines).toEqual([
      line('legacy', start, '2026-11-16T00:00:00Z', { emailsSent: 20_000, emailsIncluded: null }),
      line('pro', '2026-11-16T00:00:00Z', '2026-11-21T00:00:00Z', { emailsIncluded: null }),
      // 10.00 × 10 / 30 = 3.33; from 20,000 on, every email is over (none here).
      line('starter', '2026-11-21T00:00:00Z', end, { feeCents: 333, emailsIncluded: 10_000 }),
    ]);
  });

  it('gives the numbers of the billing info example (starter, then developer from November 16)', () => {
    const period = periodOf(
      subscribed('developer'),
      [starterSinceOctober, change('2026-11-16T00:00:00Z', 'developer')],
      [hour('2026-11-10T09:00:00Z', 10_250), hour('2026-11-23T14:00:00Z', 41_250)],
    );
    expect(period).toMatchObject({ emailsSent: 51_500, emailsIncluded: 50_000, overage: 1750, overageCostCents: 175, feesCents: 2988 });
    expect(period.lines).toEqual([
      // Half the month is 5.00, but the whole allowance used: 10.00.
      line('starter', start, '2026-11-16T00:00:00Z', {
        feeCents: 1000,
        emailsSent: 10_250,
        emailsIncluded: 10_000,
        overage: 250,
        overageCostCents: 25,
      }),
      // Half the month is 12.50, but 39,750 of the 50,000 included used (from 10,250 to 50,000): 19.875 → 19.88.
      line('developer', '2026-11-16T00:00:00Z', end, {
        feeCents: 1988,
        emailsSent: 41_250,
        emailsIncluded: 50_000,
        overage: 1500,
        overageCostCents: 150,
      }),
    ]);
  });

  it('bills a short stay on a large plan by the allowance it used, not by the hours it lasted', () => {
    // Scale for one hour on November 30, 240,000 emails in it, then back to starter.
    const period = periodOf(
      subscribed('starter'),
      [starterSinceOctober, change('2026-11-30T10:00:00Z', 'scale'), change('2026-11-30T11:00:00Z', 'starter', 240_000)],
      [hour('2026-11-30T10:00:00Z', 240_000)],
    );
    // One hour of scale is 0.13; 240,000 of its 250,000 included: 86.40. Back on starter the total is past 10,000.
    expect(period.lines.map((l) => [l.plan, l.feeCents, l.emailsSent, l.overage])).toEqual([
      ['starter', 981, 0, 0],
      ['scale', 8640, 240_000, 0],
      ['starter', 18, 0, 0],
    ]);
  });

  describe('allowanceUsedCents', () => {
    const starter = termsOf({
      tier: 'pro',
      accountCreatedAt: start,
      subscription: { plan: 'starter', status: 'active' },
      catalog,
      now: start,
    });

    it('is the fee for the included emails between two running totals, rounded half up to the cent', () => {
      expect(allowanceUsedCents(starter, 0, 10_000)).toBe(1000);
      expect(allowanceUsedCents(starter, 0, 12_000)).toBe(1000); // overage is billed apart
      expect(allowanceUsedCents(starter, 9_995, 20_000)).toBe(1); // 5 emails: 0.5 cent
      expect(allowanceUsedCents(starter, 9_996, 20_000)).toBe(0);
      expect(allowanceUsedCents(starter, 12_000, 20_000)).toBe(0);
    });

    it('is nothing for terms without a fee or an allowance', () => {
      const free = termsOf({ tier: 'free', accountCreatedAt: start, subscription: null, catalog, now: start });
      expect(allowanceUsedCents(free, 0, 100)).toBe(0);
    });
  });

  describe('proRataCents', () => {
    const month = { startMs: start.getTime(), endMs: end.getTime() };

    it('is the whole fee for the whole month, and rounds half up to the cent', () => {
      expect(proRataCents(9000, month.startMs, month.endMs, month)).toBe(9000);
      expect(proRataCents(1, month.startMs, month.startMs + 1_296_000_000, month)).toBe(1); // half a cent
      expect(proRataCents(1, month.startMs, month.startMs + 1_295_999_000, month)).toBe(0);
      expect(proRataCents(100_000_000, month.startMs, month.endMs - 1000, month)).toBe(99_999_961);
    });

    it('counts whole seconds, so that the parts add up to the month', () => {
      const cut = month.startMs + 1_000_000_500; // half a second into a second
      expect(proRataCents(2_592_000, month.startMs, cut, month) + proRataCents(2_592_000, cut, month.endMs, month)).toBe(2_592_000);
      expect(proRataCents(2_592_000, month.startMs, cut, month)).toBe(1_000_000);
    });
  });
});
