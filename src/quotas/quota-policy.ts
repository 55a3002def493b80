import type { AccountTier } from '../config/app-config.service';

/**
 * The plan quotas of D-13 (spec "Limits by plan", variant C), as data. Absent = unlimited. Enterprise
 * quotas come from the account's settings.quotas and are unlimited until set.
 */
export interface TierQuotas {
  /** A hard stop at this many emails a calendar month (Free only; paid plans go into overage). */
  emailsPerMonth?: number;
  formSubmissionsPerHour?: number;
  formSubmissionsPerDay?: number;
}

export const FREE_MONTHLY_EMAILS = 180;
/** Free accounts get twice the quota in the calendar month they were created in. */
export const FREE_FIRST_MONTH_EMAILS = 360;

export const TIER_QUOTAS: Record<AccountTier, TierQuotas> = {
  free: { emailsPerMonth: FREE_MONTHLY_EMAILS, formSubmissionsPerHour: 100, formSubmissionsPerDay: 1000 },
  pro: { formSubmissionsPerHour: 2000, formSubmissionsPerDay: 20_000 },
  enterprise: {},
};

/** The Free monthly email quota of an account created at `createdAt`, in the month of `now` (UTC). */
export function freeMonthlyEmails(createdAt: Date, now: Date): number {
  const sameMonth = createdAt.getUTCFullYear() === now.getUTCFullYear() && createdAt.getUTCMonth() === now.getUTCMonth();
  return sameMonth ? FREE_FIRST_MONTH_EMAILS : FREE_MONTHLY_EMAILS;
}
