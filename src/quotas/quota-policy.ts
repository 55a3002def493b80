import type { AccountTier } from '../config/app-config.service';
import { ErrorCode } from '../common/errors/error-code';
import type { Metering } from './usage-statement';

/**
 * The quotas of D-13 as data and pure functions: which quotas an account has, which counters an acceptance
 * moves, their windows and reset times. QuotaService turns them into one Redis call; nothing here does I/O.
 */

/**
 * The plan quotas of D-13 (spec "Limits by plan", variant C), as data. Absent = unlimited. Enterprise
 * quotas come from the account's settings.quotas and are unlimited until set.
 */
export interface TierQuotas {
  /** A hard stop at this many emails a calendar month (Free only; paid plans go into overage). */
  emailsPerMonth?: number;
  /** Forwarded emails (inbound mail sent on by a forwarding rule) a calendar month: their own stop, never overage. */
  forwardsPerMonth?: number;
  formSubmissionsPerHour?: number;
  formSubmissionsPerDay?: number;
}

export const FREE_MONTHLY_EMAILS = 180;
/** Free accounts get twice the quota in the calendar month they were created in. */
export const FREE_FIRST_MONTH_EMAILS = 360;

/**
 * Forwarding is driven by whoever mails the account's addresses, so it has a quota of its own (D-37): a catch-all
 * under a spam run stops forwarding, never the account's own sends. Free: the 500 a day that forwarding services
 * give their free plans as an abuse ceiling, spread here over a month (Free is a trial of a sending service);
 * Pro: five times the smallest plan's included emails, never billed as overage.
 */
export const FREE_MONTHLY_FORWARDS = 500;
export const PRO_MONTHLY_FORWARDS = 50_000;

export const TIER_QUOTAS: Record<AccountTier, TierQuotas> = {
  free: {
    emailsPerMonth: FREE_MONTHLY_EMAILS,
    forwardsPerMonth: FREE_MONTHLY_FORWARDS,
    formSubmissionsPerHour: 100,
    formSubmissionsPerDay: 1000,
  },
  pro: { forwardsPerMonth: PRO_MONTHLY_FORWARDS, formSubmissionsPerHour: 2000, formSubmissionsPerDay: 20_000 },
  enterprise: {},
};

/** The Free monthly email quota of an account created at `createdAt`, in the month of `now` (UTC). */
export function freeMonthlyEmails(createdAt: Date, now: Date): number {
  const sameMonth = createdAt.getUTCFullYear() === now.getUTCFullYear() && createdAt.getUTCMonth() === now.getUTCMonth();
  return sameMonth ? FREE_FIRST_MONTH_EMAILS : FREE_MONTHLY_EMAILS;
}

/** The largest value a quota or global limit may be set to (they are counted in Redis integers and bigint rows). */
export const MAX_QUOTA_VALUE = 1_000_000_000;

/**
 * What a quota counts: accepted email recipients, accepted form submissions, recipients of forwarded mail, or
 * emails and submissions together ("units", global_limits). Units leave forwards out: global_limits cap the
 * account's own sends and form posts, and strangers mailing its addresses must not spend them.
 */
export type QuotaUnit = 'emails' | 'submissions' | 'forwards' | 'units';
/** Calendar windows in UTC: the hour, the day, the month. */
export type QuotaWindow = 'hour' | 'day' | 'month';

export type QuotaName =
  | 'emails_per_month'
  | 'forwards_per_month'
  | 'form_submissions_per_hour'
  | 'form_submissions_per_day'
  | 'global_hourly'
  | 'global_daily'
  | 'global_monthly';

export interface QuotaDefinition {
  name: QuotaName;
  unit: QuotaUnit;
  window: QuotaWindow;
  /** plan: the tier's (or settings.quotas) → QUOTA_EXCEEDED; global: the account's own global_limits → ACCOUNT_QUOTA_EXCEEDED. */
  kind: 'plan' | 'global';
}

/** Every quota, plan quotas first (the order the settings route lists them in and ties are broken by). */
export const QUOTAS: readonly QuotaDefinition[] = [
  { name: 'emails_per_month', unit: 'emails', window: 'month', kind: 'plan' },
  { name: 'forwards_per_month', unit: 'forwards', window: 'month', kind: 'plan' },
  { name: 'form_submissions_per_hour', unit: 'submissions', window: 'hour', kind: 'plan' },
  { name: 'form_submissions_per_day', unit: 'submissions', window: 'day', kind: 'plan' },
  { name: 'global_hourly', unit: 'units', window: 'hour', kind: 'global' },
  { name: 'global_daily', unit: 'units', window: 'day', kind: 'global' },
  { name: 'global_monthly', unit: 'units', window: 'month', kind: 'global' },
];

/** accounts.settings.quotas: an operator's custom plan quotas (enterprise), laid over the tier's field by field. */
export interface SettingsQuotas {
  emails_per_month?: number;
  forwards_per_month?: number;
  form_submissions_per_hour?: number;
  form_submissions_per_day?: number;
}

/** accounts.settings.global_limits: caps the account's admin sets on its own units (spec "Form submission limits"). */
export interface GlobalLimits {
  hourly?: number;
  daily?: number;
  monthly?: number;
}

export const SETTINGS_QUOTA_FIELDS = [
  'emails_per_month',
  'forwards_per_month',
  'form_submissions_per_hour',
  'form_submissions_per_day',
] as const;
export const GLOBAL_LIMIT_FIELDS = ['hourly', 'daily', 'monthly'] as const;

/** What the quotas need of an account. */
export interface QuotaAccount {
  tier: AccountTier;
  createdAt: Date;
  isOperator: boolean;
  quotas: SettingsQuotas;
  globalLimits: GlobalLimits;
}

/** The positive integers (up to MAX_QUOTA_VALUE) of `fields` in a settings object; anything else is ignored. */
function positiveFields<F extends string>(raw: unknown, fields: readonly F[]): Partial<Record<F, number>> {
  const out: Partial<Record<F, number>> = {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return out;
  for (const field of fields) {
    const value = (raw as Record<string, unknown>)[field];
    if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= MAX_QUOTA_VALUE) out[field] = value;
  }
  return out;
}

export function parseSettingsQuotas(raw: unknown): SettingsQuotas {
  return positiveFields(raw, SETTINGS_QUOTA_FIELDS);
}

export function parseGlobalLimits(raw: unknown): GlobalLimits {
  return positiveFields(raw, GLOBAL_LIMIT_FIELDS);
}

/**
 * The limit of every quota for the account at `now`; null = unlimited. The tier's plan quotas (none for the
 * operator account, whatever its tier: it runs the installation) with settings.quotas laid over them, and the
 * account's global_limits.
 */
export function quotaLimits(account: QuotaAccount, now: Date): Record<QuotaName, number | null> {
  const tier: TierQuotas = account.isOperator ? {} : TIER_QUOTAS[account.tier];
  const planEmails = !account.isOperator && account.tier === 'free' ? freeMonthlyEmails(account.createdAt, now) : tier.emailsPerMonth;
  const { quotas, globalLimits } = account;
  return {
    emails_per_month: quotas.emails_per_month ?? planEmails ?? null,
    forwards_per_month: quotas.forwards_per_month ?? tier.forwardsPerMonth ?? null,
    form_submissions_per_hour: quotas.form_submissions_per_hour ?? tier.formSubmissionsPerHour ?? null,
    form_submissions_per_day: quotas.form_submissions_per_day ?? tier.formSubmissionsPerDay ?? null,
    global_hourly: globalLimits.hourly ?? null,
    global_daily: globalLimits.daily ?? null,
    global_monthly: globalLimits.monthly ?? null,
  };
}

export interface WindowSpan {
  startMs: number;
  /** When the window ends and its quota is whole again. */
  endMs: number;
  /** Names the window in a counter's key: h2026112306, d20261123, m202611. */
  id: string;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The UTC calendar window of the given kind that holds `nowMs`. */
export function windowOf(window: QuotaWindow, nowMs: number): WindowSpan {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  const h = d.getUTCHours();
  switch (window) {
    case 'hour':
      return { startMs: Date.UTC(y, m, day, h), endMs: Date.UTC(y, m, day, h + 1), id: `h${y}${pad(m + 1)}${pad(day)}${pad(h)}` };
    case 'day':
      return { startMs: Date.UTC(y, m, day), endMs: Date.UTC(y, m, day + 1), id: `d${y}${pad(m + 1)}${pad(day)}` };
    case 'month':
      return { startMs: Date.UTC(y, m, 1), endMs: Date.UTC(y, m + 1, 1), id: `m${y}${pad(m + 1)}` };
  }
}

/** What the quotas read of a metering: forwards absent count none. */
export type MeteredCounts = Pick<Metering, 'emails' | 'submissions' | 'forwards'>;

/** One window's (or one acceptance's) counts of every unit that is stored. */
export interface UnitCounts {
  emails: number;
  submissions: number;
  forwards: number;
}

/** The count of `unit` in `counts` (a metering, or a window's usage). */
function countOf(unit: QuotaUnit, counts: MeteredCounts): number {
  switch (unit) {
    case 'emails':
      return counts.emails;
    case 'submissions':
      return counts.submissions;
    case 'forwards':
      return counts.forwards ?? 0;
    case 'units':
      return counts.emails + counts.submissions;
  }
}

/** What one acceptance adds to a counter of this unit. */
export function costOf(unit: QuotaUnit, metering: MeteredCounts): number {
  return countOf(unit, metering);
}

/** An account's usage in the current hour, day and month (from account_usage_hourly). */
export type WindowUsage = Record<QuotaWindow, UnitCounts>;

export function usedIn(usage: WindowUsage, unit: QuotaUnit, window: QuotaWindow): number {
  return countOf(unit, usage[window]);
}

type RedisKey = (...parts: string[]) => string;

/** The key of an account's counter of `unit` in a window; QuotaStore keeps it under the Redis server's run (`<key>:<run_id>`). */
export function counterKey(redisKey: RedisKey, accountId: string, unit: QuotaUnit, windowId: string): string {
  return redisKey('quota', accountId, unit, windowId);
}

/** Every counter an account can have in the windows holding `nowMs` (to drop them all). */
export function allCounterKeys(redisKey: RedisKey, accountId: string, nowMs: number): string[] {
  return QUOTAS.map((q) => counterKey(redisKey, accountId, q.unit, windowOf(q.window, nowMs).id));
}

/** One quota an acceptance is checked against, with the counter it moves. */
export interface QuotaRule {
  quota: QuotaDefinition;
  limit: number;
  /** What this acceptance adds to the counter. */
  cost: number;
  key: string;
  window: WindowSpan;
  /** How long a counter loaded from PostgreSQL is trusted: the sync interval, never much past its window. */
  ttlMs: number;
}

/** After its window ends a counter is no longer read; it stays a little so that a late release finds it. */
const AFTER_WINDOW_MS = 60_000;

/**
 * The quotas an acceptance is checked against: those with a limit that it adds to (an email send is not held
 * to the form-submission quotas). Empty: nothing to check, no Redis call.
 */
export function reservationRules(
  accountId: string,
  limits: Record<QuotaName, number | null>,
  metering: MeteredCounts,
  nowMs: number,
  syncMs: number,
  redisKey: RedisKey,
): QuotaRule[] {
  const rules: QuotaRule[] = [];
  for (const quota of QUOTAS) {
    const limit = limits[quota.name];
    const cost = costOf(quota.unit, metering);
    if (limit === null || cost <= 0) continue;
    const window = windowOf(quota.window, nowMs);
    rules.push({
      quota,
      limit,
      cost,
      key: counterKey(redisKey, accountId, quota.unit, window.id),
      window,
      ttlMs: Math.max(1000, Math.min(syncMs, window.endMs - nowMs + AFTER_WINDOW_MS)),
    });
  }
  return rules;
}

/** Whether every rule takes its cost on top of the counted values. */
export function fits(rules: readonly QuotaRule[], used: readonly number[]): boolean {
  return rules.every((rule, i) => used[i] + rule.cost <= rule.limit);
}

/** The refusing rule to report: the one that keeps the caller waiting longest (plan quotas first among equals). */
export function refusingRule(rules: readonly QuotaRule[], used: readonly number[]): { rule: QuotaRule; used: number } | null {
  let worst: { rule: QuotaRule; used: number } | null = null;
  rules.forEach((rule, i) => {
    if (used[i] + rule.cost <= rule.limit) return;
    if (!worst || rule.window.endMs > worst.rule.window.endMs) worst = { rule, used: used[i] };
  });
  return worst;
}

const WINDOW_TEXT: Record<QuotaWindow, string> = { hour: 'per hour', day: 'per day', month: 'per calendar month' };
const UNIT_TEXT: Record<QuotaUnit, string> = {
  emails: 'emails',
  submissions: 'form submissions',
  forwards: 'forwarded emails',
  units: 'emails and form submissions together',
};

export interface QuotaRefusal {
  code: ErrorCode.QuotaExceeded | ErrorCode.AccountQuotaExceeded;
  message: string;
  details: {
    limit: number;
    remaining: number;
    reset_time: string;
    retry_after: number;
    scope: 'account';
    quota: QuotaName;
    window: QuotaWindow;
    requested: number;
  };
  retryAfterSec: number;
}

/** The 429 of a refused acceptance (D-10, D-12): what the quota allows, what is left, when it resets. */
export function refusalOf(rule: QuotaRule, used: number, nowMs: number): QuotaRefusal {
  const remaining = Math.max(0, rule.limit - used);
  const retryAfterSec = Math.max(1, Math.ceil((rule.window.endMs - nowMs) / 1000));
  const resetTime = new Date(rule.window.endMs).toISOString();
  const { quota } = rule;
  const allows = `${rule.limit} ${UNIT_TEXT[quota.unit]} ${WINDOW_TEXT[quota.window]}`;
  const left = `${remaining} left, this request needs ${rule.cost}`;
  const message =
    quota.kind === 'plan'
      ? `Quota exceeded: your plan allows ${allows} (${left}); it resets at ${resetTime}`
      : `Account quota exceeded: the account's global_limits allow ${allows} (${left}); it resets at ${resetTime}`;
  return {
    code: quota.kind === 'plan' ? ErrorCode.QuotaExceeded : ErrorCode.AccountQuotaExceeded,
    message,
    details: {
      limit: rule.limit,
      remaining,
      reset_time: resetTime,
      retry_after: retryAfterSec,
      scope: 'account',
      quota: quota.name,
      window: quota.window,
      requested: rule.cost,
    },
    retryAfterSec,
  };
}
