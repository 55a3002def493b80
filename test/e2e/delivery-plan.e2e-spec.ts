import { DataSource } from 'typeorm';
import { ATTEMPT_RESULTS_SQL } from '../../src/email/delivery.store';
import { AWAITING_DELIVERY } from '../../src/outbox/message.entity';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

const BACKLOG = 3000;

/** Every index a plan (EXPLAIN FORMAT JSON) reads, and every table it scans whole. */
function scans(plan: Record<string, unknown>): string[] {
  const own = [plan['Index Name'], plan['Node Type'] === 'Seq Scan' ? `seq:${String(plan['Relation Name'])}` : undefined];
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [...own.filter((s): s is string => typeof s === 'string'), ...children.flatMap(scans)];
}

// Issue 16: the worker's batched result write read the whole partial index of awaiting messages for every batch
// once a backlog had built up (the planner guesses 100 rows for jsonb_to_recordset), which made PostgreSQL the
// largest cost of a delivery. Freshly queued rows, not yet analyzed, are where it chose that plan.
describe('the worker’s batched result write with a backlog queued', () => {
  let t: TestApp;
  let dataSource: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ env: { APP_ROLE: 'api' } }); // nothing delivers: the backlog stays queued
    dataSource = t.app.get(DataSource);
    const account = await createAccount(t, 'Backlog');
    const { key } = await createKey(t, account.adminKey, { keyType: 'usage' });
    await createVerifiedDomain(t, account.accountId, 'backlog.acme.test');
    for (let sent = 0; sent < BACKLOG; sent += 500) {
      const recipients = Array.from({ length: 500 }, (_, i) => ({ email: `r${sent + i}@example.org` }));
      await t.http
        .post('/email/batch')
        .set(bearer(key))
        .send({ from: 'hello@backlog.acme.test', subject: 'Backlog', text: 'x', recipients })
        .expect(200);
    }
  }, 60_000);
  afterAll(() => t.close());

  it('finds each message by its key instead of reading every awaiting message', async () => {
    const queued = await dataSource.query<{ id: string }[]>(`SELECT id FROM messages WHERE status = 'queued' LIMIT 20`);
    const ids = queued.map((r) => r.id);
    expect(ids).toHaveLength(20);
    const rows = ids.map((id) => ({
      id,
      status: 'sent',
      pending_recipients: [],
      attempts: 1,
      set_last_error: true,
      last_error: null,
      sent_at: new Date(),
    }));
    const [{ 'QUERY PLAN': plan }] = await dataSource.query<{ 'QUERY PLAN': { Plan: Record<string, unknown> }[] }[]>(
      `EXPLAIN (FORMAT JSON) ${ATTEMPT_RESULTS_SQL}`,
      [JSON.stringify(rows), [...AWAITING_DELIVERY], '[]', ids],
    );
    const read = scans(plan[0].Plan);
    expect(read).not.toContain('IX_messages_awaiting_delivery');
    expect(read).not.toContain('seq:messages');
    expect(read.filter((name) => name.startsWith('PK_'))).not.toHaveLength(0);

    // And it still writes what it should: the twenty move, with their events.
    const moved = await dataSource.query<{ id: string }[]>(ATTEMPT_RESULTS_SQL, [
      JSON.stringify(rows),
      [...AWAITING_DELIVERY],
      JSON.stringify(ids.map((id, n) => ({ n, message_id: id, type: 'sent', recipient: null, detail: '250 OK', occurred_at: new Date() }))),
      ids,
    ]);
    expect(moved.map((r) => r.id).sort()).toEqual([...ids].sort());
    const [{ n }] = await dataSource.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM message_events WHERE message_id = ANY($1) AND type = 'sent'`,
      [ids],
    );
    expect(n).toBe(20);
  });
});
