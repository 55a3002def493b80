import { meteringOf, usageStatement } from './email.repository';
import type { Message } from './message.entity';

const message = (accountId: string, recipients: string[]) => ({ message: { accountId, recipients } as Message, events: [] });

describe('meteringOf', () => {
  it('counts one email per recipient of every message by default', () => {
    expect(meteringOf({ messages: [message('acc_a', ['x@a.test', 'y@a.test']), message('acc_a', ['z@a.test'])] })).toEqual({
      accountId: 'acc_a',
      emails: 3,
      submissions: 0,
    });
  });

  it('meters nothing for an acceptance without messages unless told', () => {
    expect(meteringOf({ messages: [] })).toBeNull();
    expect(meteringOf({ messages: [], metering: { accountId: 'acc_a', emails: 500, submissions: 0 } })?.emails).toBe(500);
  });

  it('keeps an explicit null: the messages are metered elsewhere', () => {
    expect(meteringOf({ messages: [message('acc_a', ['x@a.test'])], metering: null })).toBeNull();
  });
});

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
});
