import { creditStatement, usageStatement } from './usage-statement';

describe('usageStatement', () => {
  it('adds the counts of one account in one row, accounts in a fixed order', () => {
    const params: unknown[] = [];
    const sql = usageStatement(
      [
        { accountId: 'acc_b', emails: 2, submissions: 0 },
        null,
        { accountId: 'acc_a', emails: 0, submissions: 1 },
        { accountId: 'acc_b', emails: 3, submissions: 1 },
      ],
      (value) => `$${params.push(value)}`,
    );
    expect(sql).toContain('ON CONFLICT (account_id, hour) DO UPDATE');
    expect(params).toEqual(['acc_a', 0, 1, 0, 'acc_b', 5, 1, 0]);
    // Only a row with emails moves last_email_at.
    expect(sql).toMatch(/\$4::bigint, NULL::timestamptz\), \(\$5, .*\$8::bigint, now\(\)\)/);
  });

  it('adds forwarded mail to forwards, not emails, and does not move last_email_at for it', () => {
    const params: unknown[] = [];
    const sql = usageStatement(
      [
        { accountId: 'acc_a', emails: 0, submissions: 0, forwards: 2 },
        { accountId: 'acc_a', emails: 0, submissions: 0, forwards: 1 },
      ],
      (value) => `$${params.push(value)}`,
    );
    expect(params).toEqual(['acc_a', 0, 0, 3]);
    expect(sql).toContain('forwards = account_usage_hourly.forwards + excluded.forwards');
    expect(sql).toMatch(/\$4::bigint, NULL::timestamptz\)/);
  });

  it('writes nothing when nothing was metered', () => {
    expect(usageStatement([null, { accountId: 'acc_a', emails: 0, submissions: 0, forwards: 0 }], () => '$1')).toBeNull();
  });

  it('takes a credit off the usage of the hour the emails were counted in, adding a row where that hour has none', () => {
    const params: unknown[] = [];
    const countedAt = new Date('2026-11-30T23:59:10Z');
    const sql = creditStatement({ accountId: 'acc_a', emails: 20, countedAt }, (value) => `$${params.push(value)}`);
    expect(sql).toContain("VALUES ($1, date_trunc('hour', $2::timestamptz, 'UTC'), $3::bigint, 0, 0)");
    expect(sql).toContain('ON CONFLICT (account_id, hour) DO UPDATE SET emails = account_usage_hourly.emails + excluded.emails');
    expect(params).toEqual(['acc_a', countedAt, -20]);
  });
});
