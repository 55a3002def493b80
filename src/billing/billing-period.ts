import type { AccountTier } from '../config/app-config.service';
import { windowOf } from '../quotas/quota-policy';
import { type BillingTerms, overageCostCents, termsOf } from './billing-terms';
import type { PlanCatalog } from './plans';

/** A subscribe, plan change or cancel as the period reads it (billing_plan_changes). */
export interface PlanChange {
  at: Date;
  /** The plan from `at` on; null: no subscription. */
  plan: string | null;
  tierBefore: AccountTier;
  tierAfter: AccountTier;
  /** The emails of the usage row of `at`'s hour when the change was made: they belong before it. */
  hourEmailsBefore: number;
}

/** A usage row: the emails of the UTC hour starting at `hour`. */
export interface HourEmails {
  hour: Date;
  emails: number;
}

/** A part of the month under one set of terms: an invoice line. */
export interface PeriodLine {
  plan: string;
  from: Date;
  to: Date;
  /** The plan's monthly fee pro rata to the part's share of the month (to the second) or of the included emails it used, whichever is more. */
  feeCents: number;
  emailsSent: number;
  emailsIncluded: number | null;
  overage: number;
  overageCostCents: number;
}

/** The current UTC calendar month, cut into parts at each plan change in it. */
export interface BillingPeriod {
  start: Date;
  end: Date;
  emailsSent: number;
  /** The current terms' included emails. */
  emailsIncluded: number | null;
  /** Sums over the lines. */
  overage: number;
  overageCostCents: number;
  feesCents: number;
  lines: PeriodLine[];
}

/** What was subscribed in a part of the month, and the account's tier then. */
interface PartState {
  plan: string | null;
  tier: AccountTier;
}

/**
 * The month holding `now`, cut at each plan change in it. A part before the first change takes its state from
 * the latest change before the month (none: the account's tier before its first change); the open part, which
 * runs to the month's end, takes the current terms, so that with no change in the month the one line is what
 * the whole month was before parts existed.
 *
 * A part's fee is its plan's fee pro rata to its share of the month, or to its share of the plan's included
 * emails it used, whichever is more.
 *
 * Emails belong to a part by the usage rows: the hours before the change's hour and `hourEmailsBefore` of
 * its hour are before the change. An email is overage if, when it was sent, the month's running total had
 * passed the included emails of the plan active then: a part from running total S to E with I included has
 * max(0, E − max(I, S)) over. So allowances never add up by switching plans, and emails sent before a change
 * count against the plan that follows it as they count against the month.
 */
export function billingPeriodOf(input: {
  now: Date;
  current: BillingTerms;
  accountCreatedAt: Date;
  catalog: PlanCatalog;
  /** The latest change at or before the month's start and the changes after it, oldest first. */
  changes: PlanChange[];
  /** The month's usage rows. */
  hours: HourEmails[];
}): BillingPeriod {
  const month = windowOf('month', input.now.getTime());
  const hours = input.hours.filter(({ hour }) => hour.getTime() >= month.startMs && hour.getTime() < month.endMs);
  const total = hours.reduce((sum, { emails }) => sum + emails, 0);
  const opening = input.changes.filter(({ at }) => at.getTime() <= month.startMs).at(-1);
  const cuts = input.changes.filter(({ at }) => at.getTime() > month.startMs && at.getTime() < month.endMs);

  // Without a change before the month, the account had no plan until its first one (without any change at all
  // the one part is the open one, whose terms are the current ones: the tier here is not read).
  const states: PartState[] = [
    opening ? { plan: opening.plan, tier: opening.tierAfter } : { plan: null, tier: cuts[0]?.tierBefore ?? 'free' },
    ...cuts.map((change) => ({ plan: change.plan, tier: change.tierAfter })),
  ];
  const bounds = [month.startMs, ...cuts.map(({ at }) => at.getTime()), month.endMs];
  // The running total at each bound; a credit may since have taken emails off a change's hour.
  const runningTotals = [0];
  for (const change of cuts) runningTotals.push(Math.min(total, Math.max(runningTotals.at(-1)!, emailsBefore(change, hours))));
  runningTotals.push(total);

  const lines = states.map((state, i): PeriodLine => {
    const open = i === states.length - 1;
    const terms = open ? input.current : termsOfPart(state, input);
    const [from, to] = [bounds[i], bounds[i + 1]];
    const [start, end] = [runningTotals[i], runningTotals[i + 1]];
    const overage = terms.includedEmails === null ? 0 : Math.max(0, end - Math.max(terms.includedEmails, start));
    return {
      plan: terms.plan,
      from: new Date(from),
      to: new Date(to),
      feeCents: Math.max(proRataCents(terms.monthlyFeeCents, from, to, month), allowanceUsedCents(terms, start, end)),
      emailsSent: end - start,
      emailsIncluded: terms.includedEmails,
      overage,
      overageCostCents: overageCostCents(overage, terms.overageCentsPer1000),
    };
  });
  const sum = (of: (line: PeriodLine) => number) => lines.reduce((acc, line) => acc + of(line), 0);
  return {
    start: new Date(month.startMs),
    end: new Date(month.endMs),
    emailsSent: total,
    emailsIncluded: input.current.includedEmails,
    overage: sum((line) => line.overage),
    overageCostCents: sum((line) => line.overageCostCents),
    feesCents: sum((line) => line.feeCents),
    lines,
  };
}

/** A closed part is billed by the plan it had, or by the account's tier where it had none (termsOf). */
function termsOfPart(state: PartState, input: { accountCreatedAt: Date; catalog: PlanCatalog; now: Date }): BillingTerms {
  return termsOf({
    tier: state.tier,
    accountCreatedAt: input.accountCreatedAt,
    subscription: state.plan === null ? null : { plan: state.plan, status: 'active' },
    catalog: input.catalog,
    now: input.now,
  });
}

/** The month's emails before `change`: the hours before its hour, and the part of its hour it saw. */
function emailsBefore(change: PlanChange, hours: HourEmails[]): number {
  const changeHourMs = windowOf('hour', change.at.getTime()).startMs;
  let emails = 0;
  for (const { hour, emails: hourEmails } of hours) {
    if (hour.getTime() < changeHourMs) emails += hourEmails;
    else if (hour.getTime() === changeHourMs) emails += Math.min(hourEmails, change.hourEmailsBefore);
  }
  return emails;
}

/**
 * The fee for the included emails a part used, rounded half up to the cent: a plan's fee buys its allowance, so
 * a part pays at least the share of the allowance it used, and a day on a large plan does not give its whole
 * allowance for a day's fee. The emails from running total `start` to `end` that fall within the allowance.
 */
export function allowanceUsedCents(terms: BillingTerms, start: number, end: number): number {
  const included = terms.includedEmails;
  if (!included || terms.monthlyFeeCents <= 0) return 0;
  const used = Math.max(0, Math.min(end, included) - Math.min(start, included));
  return Number((2n * BigInt(terms.monthlyFeeCents) * BigInt(used) + BigInt(included)) / (2n * BigInt(included)));
}

/**
 * `monthlyFeeCents` for the whole seconds from `fromMs` to `toMs` out of the month's, rounded half up to the
 * cent. Bounds are cut to the second, so the parts' seconds add up to the month's. Exact in doubles: at most
 * 10^8 cents × 2,678,400 seconds × 2.
 */
export function proRataCents(monthlyFeeCents: number, fromMs: number, toMs: number, month: { startMs: number; endMs: number }): number {
  const seconds = (ms: number) => Math.floor(ms / 1000);
  const part = seconds(toMs) - seconds(fromMs);
  const whole = seconds(month.endMs) - seconds(month.startMs);
  return Math.floor((2 * monthlyFeeCents * part + whole) / (2 * whole));
}
