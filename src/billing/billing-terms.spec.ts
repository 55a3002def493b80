import { overageCostCents, termsOf } from './billing-terms';
import { PlanCatalog } from './plans';

describe('billing terms', () => {
  const catalog = new PlanCatalog();
  const now = new Date('2026-11-23T14:00:00Z');
  const lastYear = new Date('2025-05-01T00:00:00Z');

  describe('termsOf', () => {
    it('takes an active subscription’s plan from the catalog', () => {
      expect(
        termsOf({ tier: 'pro', accountCreatedAt: lastYear, subscription: { plan: 'developer', status: 'active' }, catalog, now }),
      ).toEqual({
        plan: 'developer',
        status: 'active',
        monthlyFeeCents: 2500,
        includedEmails: 50_000,
        overageCentsPer1000: 100,
      });
    });

    it('bills an enterprise account by its subscription too', () => {
      expect(
        termsOf({ tier: 'enterprise', accountCreatedAt: lastYear, subscription: { plan: 'scale', status: 'active' }, catalog, now }),
      ).toMatchObject({
        plan: 'scale',
        monthlyFeeCents: 9000,
      });
    });

    it('puts a free account without a subscription on Free: the D-13 quota, no fee, no overage charge', () => {
      expect(termsOf({ tier: 'free', accountCreatedAt: lastYear, subscription: null, catalog, now })).toEqual({
        plan: 'free',
        status: 'none',
        monthlyFeeCents: 0,
        includedEmails: 180,
        overageCentsPer1000: 0,
      });
      // Twice the quota in the month the account was created.
      expect(
        termsOf({ tier: 'free', accountCreatedAt: new Date('2026-11-02T09:00:00Z'), subscription: null, catalog, now }).includedEmails,
      ).toBe(360);
      expect(
        termsOf({ tier: 'free', accountCreatedAt: lastYear, subscription: { plan: 'starter', status: 'canceled' }, catalog, now }).status,
      ).toBe('canceled');
    });

    it('does not bill a tier granted outside billing, nor a plan the catalog dropped', () => {
      const unbilled = { monthlyFeeCents: 0, includedEmails: null, overageCentsPer1000: 0 };
      expect(termsOf({ tier: 'pro', accountCreatedAt: lastYear, subscription: null, catalog, now })).toEqual({
        plan: 'pro',
        status: 'none',
        ...unbilled,
      });
      expect(termsOf({ tier: 'enterprise', accountCreatedAt: lastYear, subscription: null, catalog, now })).toEqual({
        plan: 'enterprise',
        status: 'none',
        ...unbilled,
      });
      expect(
        termsOf({ tier: 'pro', accountCreatedAt: lastYear, subscription: { plan: 'legacy', status: 'active' }, catalog, now }),
      ).toEqual({
        plan: 'legacy',
        status: 'active',
        ...unbilled,
      });
    });
  });

  describe('overageCostCents', () => {
    it('rounds half up to the cent', () => {
      expect(overageCostCents(4, 100)).toBe(0); // 0.4 cent
      expect(overageCostCents(5, 100)).toBe(1); // 0.5 cent
      expect(overageCostCents(1234, 100)).toBe(123); // 123.4 cents
      expect(overageCostCents(1235, 100)).toBe(124);
      expect(overageCostCents(1000, 65)).toBe(65);
      expect(overageCostCents(0, 100)).toBe(0);
      expect(overageCostCents(500, 0)).toBe(0);
    });

    it('stays exact where emails × rate pass 2^53', () => {
      expect(overageCostCents(9_000_000_000_000, 1_000_000)).toBe(9_000_000_000_000_000);
    });
  });
});
