import type { AccountTier } from '../config/app-config.service';
import { freeMonthlyEmails } from '../quotas/quota-policy';
import type { PlanCatalog } from './plans';
import type { SubscriptionStatus } from './billing-subscription.entity';

/** `none`: the tenant never subscribed. */
export type BillingStatus = SubscriptionStatus | 'none';

/** What a tenant pays a month, and for which emails: now, or in a part of the month. */
export interface BillingTerms {
  /** The subscription's plan; without one `free`, or the tier the operator granted (`pro`, `enterprise`). */
  plan: string;
  status: BillingStatus;
  monthlyFeeCents: number;
  /** Emails the month includes; null when nothing limits or bills them (a tier granted outside billing). */
  includedEmails: number | null;
  /** 0 where emails beyond the included ones are not billed (Free). */
  overageCentsPer1000: number;
}

/**
 * The terms of a tenant now, or in a part of the month (billing-period.ts). An active subscription decides
 * them (D-32). Without one the account's tier does: Free includes its D-13 quota and bills nothing; a pro or
 * enterprise tier without a subscription was granted by the operator and is not billed. A subscription whose
 * plan the catalog no longer names is not billed either (and logged at start).
 */
export function termsOf(input: {
  tier: AccountTier;
  accountCreatedAt: Date;
  /** The tenant's active subscription, else its latest one, else null. */
  subscription: { plan: string; status: SubscriptionStatus } | null;
  catalog: PlanCatalog;
  now: Date;
}): BillingTerms {
  const { subscription } = input;
  if (subscription?.status === 'active') {
    const plan = input.catalog.get(subscription.plan);
    return plan
      ? {
          plan: plan.name,
          status: 'active',
          monthlyFeeCents: plan.monthlyFeeCents,
          includedEmails: plan.includedEmails,
          overageCentsPer1000: plan.overageCentsPer1000,
        }
      : { plan: subscription.plan, status: 'active', monthlyFeeCents: 0, includedEmails: null, overageCentsPer1000: 0 };
  }
  const status: BillingStatus = subscription ? 'canceled' : 'none';
  if (input.tier === 'free') {
    return {
      plan: 'free',
      status,
      monthlyFeeCents: 0,
      includedEmails: freeMonthlyEmails(input.accountCreatedAt, input.now),
      overageCentsPer1000: 0,
    };
  }
  return { plan: input.tier, status, monthlyFeeCents: 0, includedEmails: null, overageCentsPer1000: 0 };
}

/**
 * Overage is charged pro rata per email (1,500 emails at 1.00 per 1,000 cost 1.50), rounded half up to the
 * cent once per invoice line (a part of the month under one plan). BigInt: emails × rate may pass 2^53.
 */
export function overageCostCents(overage: number, centsPer1000: number): number {
  if (overage <= 0 || centsPer1000 <= 0) return 0;
  return Number((BigInt(overage) * BigInt(centsPer1000) + 500n) / 1000n);
}

export function centsToAmount(cents: number): number {
  return cents / 100;
}
