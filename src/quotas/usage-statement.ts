/**
 * What an acceptance counts against its account's quotas and records as usage (D-13, D-32): every accepted
 * email recipient and every accepted form submission counts one. Forwarded mail counts its recipients as
 * forwards instead of emails (D-37): its own quota, not billed.
 */
export interface Metering {
  accountId: string;
  emails: number;
  submissions: number;
  /** Recipients of forwarded mail; absent: none. */
  forwards?: number;
}

/**
 * Adds the metered counts to each account's row of the current hour (D-32: usage per accepted recipient).
 * One row per account, in account order, so that concurrent statements lock the rows they share in the
 * same order; the upsert adds atomically, so no concurrent acceptance loses another's count.
 */
export function usageStatement(meterings: (Metering | null)[], param: (value: unknown) => string): string | null {
  const byAccount = new Map<string, { emails: number; submissions: number; forwards: number }>();
  for (const metering of meterings) {
    const forwards = metering?.forwards ?? 0;
    if (!metering || (metering.emails === 0 && metering.submissions === 0 && forwards === 0)) continue;
    const sum = byAccount.get(metering.accountId) ?? { emails: 0, submissions: 0, forwards: 0 };
    sum.emails += metering.emails;
    sum.submissions += metering.submissions;
    sum.forwards += forwards;
    byAccount.set(metering.accountId, sum);
  }
  if (byAccount.size === 0) return null;
  const rows = [...byAccount]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(
      ([accountId, { emails, submissions, forwards }]) =>
        `(${param(accountId)}, date_trunc('hour', now(), 'UTC'), ${param(emails)}::bigint, ${param(submissions)}::bigint, ` +
        `${param(forwards)}::bigint, ${emails > 0 ? 'now()' : 'NULL::timestamptz'})`,
    );
  return (
    `INSERT INTO account_usage_hourly (account_id, hour, emails, submissions, forwards, last_email_at) VALUES ${rows.join(', ')} ` +
    'ON CONFLICT (account_id, hour) DO UPDATE SET emails = account_usage_hourly.emails + excluded.emails, ' +
    'submissions = account_usage_hourly.submissions + excluded.submissions, ' +
    'forwards = account_usage_hourly.forwards + excluded.forwards, ' +
    'last_email_at = COALESCE(excluded.last_email_at, account_usage_hourly.last_email_at)'
  );
}

/**
 * Emails an acceptance counted that will never be sent (a cancelled scheduled message, subscribers a list send
 * did not reach): given back in the hour they were counted in, so that the month they counted against (its
 * quota and its bill) gets them back, whenever the credit happens.
 */
export interface EmailCredit {
  accountId: string;
  emails: number;
  /** When the emails were counted: their acceptance. */
  countedAt: Date;
}

/**
 * Takes a credit off the usage of the hour it was counted in. An upsert adding a negative amount, so that no
 * credit is lost where the emails were counted in another hour of the month (a list send counts its
 * subscribers when it is accepted, and a message of it cancelled later names the hour its page was made): the
 * quotas and the bill read the month's sum.
 */
export function creditStatement({ accountId, emails, countedAt }: EmailCredit, param: (value: unknown) => string): string {
  return (
    'INSERT INTO account_usage_hourly (account_id, hour, emails, submissions, forwards) ' +
    `VALUES (${param(accountId)}, date_trunc('hour', ${param(countedAt)}::timestamptz, 'UTC'), ${param(-emails)}::bigint, 0, 0) ` +
    'ON CONFLICT (account_id, hour) DO UPDATE SET emails = account_usage_hourly.emails + excluded.emails'
  );
}
