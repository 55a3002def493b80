import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

interface ErrorBody {
  error?: { code?: string; details?: { fields?: { field: string; message: string }[] } };
}

// Listings that page count their rows for the first page only: the following pages carry that total in the cursor,
// so a total is as of the first page (rows added meanwhile do not change it), and no page counts the table again.
describe('listing totals carried by the cursor', () => {
  let t: TestApp;
  const site = 'https://www.listing-totals.test';

  beforeAll(async () => {
    t = await createTestApp({ env: { PUBLIC_URL: 'http://totals.mailroom.test' } });
  });

  afterAll(async () => {
    await t.close();
  });

  const expectCursorRefused = (res: { status: number; body: ErrorBody }) =>
    expect({ status: res.status, code: res.body.error?.code, fields: res.body.error?.details?.fields }).toEqual({
      status: 400,
      code: 'VALIDATION_FAILED',
      fields: [{ field: 'cursor', message: 'is not a cursor this listing returned' }],
    });

  it('suppression list: later pages answer the first page’s count, and a cursor serves only its own listing', async () => {
    const { adminKey } = await createAccount(t, 'Suppressions');
    const add = (email: string, reason = 'manual') =>
      t.http.post('/email/suppression').set(bearer(adminKey)).send({ email, reason }).expect(201);
    const list = (query: Record<string, string | number>) => t.http.get('/email/suppression').query(query).set(bearer(adminKey));
    const before = Array.from({ length: 5 }, (_, i) => `before${i}@example.org`);
    for (const email of before) await add(email);

    const first = await list({ limit: 2 }).expect(200);
    expect(first.body.count).toBe(5);
    for (let i = 0; i < 3; i++) await add(`meanwhile${i}@example.org`);

    const seen: string[] = first.body.entries.map((e: { email: string }) => e.email);
    let cursor: string | null = first.body.nextCursor;
    while (cursor) {
      const page = await list({ limit: 2, cursor }).expect(200);
      expect(page.body.count).toBe(5);
      seen.push(...page.body.entries.map((e: { email: string }) => e.email));
      cursor = page.body.nextCursor;
    }
    expect(seen.sort()).toEqual([...before].sort());
    expect((await list({ limit: 2 }).expect(200)).body.count).toBe(8);

    // Another filter, or another account, has another total: the cursor is not theirs.
    expectCursorRefused(await list({ limit: 2, reason: 'unsubscribed', cursor: first.body.nextCursor }));
    const other = await createAccount(t, 'Other suppressions');
    expectCursorRefused(await t.http.get('/email/suppression').query({ cursor: first.body.nextCursor }).set(bearer(other.adminKey)));
    expectCursorRefused(await list({ cursor: 'garbage' }));
    expectCursorRefused(await list({ cursor: Buffer.from('["2026-01-01T00:00:00.000Z","sup_x",-4,"AAAAAAAA"]').toString('base64url') }));
  });

  it('form submissions: later pages answer the first page’s total, per form and status', async () => {
    const { adminKey } = await createAccount(t, 'Submissions');
    const form = async () =>
      (
        await t.http
          .post('/api/forms')
          .set(bearer(adminKey))
          .send({ name: `Totals ${randomBytes(3).toString('hex')}`, to: 'owner@acme.example', allowedOrigins: [site], rateLimit: 1000 })
          .expect(201)
      ).body.id as string;
    const id = await form();
    const submit = (name: string) =>
      t.http.post(`/f/${id}`).set({ Accept: 'application/json', Origin: site }).send({ name, email: 'ada@example.org' }).expect(200);
    const list = (formId: string, query: Record<string, string | number>) =>
      t.http.get(`/api/forms/${formId}/submissions`).query(query).set(bearer(adminKey));
    for (let i = 0; i < 4; i++) await submit(`before ${i}`);

    const first = await list(id, { limit: 3 }).expect(200);
    expect(first.body.total).toBe(4);
    await submit('meanwhile');
    const second = await list(id, { limit: 3, cursor: first.body.nextCursor }).expect(200);
    expect(second.body).toMatchObject({ total: 4, nextCursor: null });
    expect(second.body.submissions.map((s: { fields: { name: string } }) => s.fields.name)).toEqual(['before 0']);
    expect((await list(id, { limit: 3 }).expect(200)).body.total).toBe(5);

    expectCursorRefused(await list(id, { status: 'spam', cursor: first.body.nextCursor }));
    expectCursorRefused(await list(await form(), { cursor: first.body.nextCursor }));
    expectCursorRefused(await list(id, { cursor: 'garbage' }));
  });

  /**
   * Ids ($1 || 1 … 8) and creation times of eight rows, as a group commit makes them: six in one millisecond,
   * microseconds apart (two pairs share a microsecond), one in the millisecond before and one in the one after.
   */
  const SAME_MILLISECOND_ROWS = `
    SELECT $1 || i AS id, CASE WHEN i = 7 THEN timestamptz '2026-01-01 00:00:00.1224+00'
                               WHEN i = 8 THEN timestamptz '2026-01-01 00:00:00.124+00'
                               ELSE timestamptz '2026-01-01 00:00:00.1231+00' + (i / 2) * interval '100 microseconds' END AS created_at
    FROM generate_series(1, 8) i`;
  const newestFirst = (prefix: string) => [8, 6, 5, 4, 3, 2, 1, 7].map((i) => `${prefix}${i}`);

  /** Every id of a listing, following its cursors `limit` rows at a time. */
  async function pageThrough(key: string, path: string, items: string, limit: number): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: Record<string, unknown> } = await t.http
        .get(path)
        .query({ limit, ...(cursor ? { cursor } : {}) })
        .set(bearer(key))
        .expect(200);
      ids.push(...(page.body[items] as { id: string }[]).map((item) => item.id));
      cursor = page.body.nextCursor as string | null;
    } while (cursor);
    return ids;
  }

  it('form submissions created in one millisecond, microseconds apart, each appear on exactly one page', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Same millisecond');
    const formId = (
      await t.http.post('/api/forms').set(bearer(adminKey)).send({ name: 'Same millisecond', to: 'owner@acme.example' }).expect(201)
    ).body.id as string;
    await t.app.get(DataSource).query(
      `INSERT INTO form_submissions (id, account_id, form_id, status, fields, created_at)
       SELECT id, $2, $3, 'accepted', '{}', created_at FROM (${SAME_MILLISECOND_ROWS}) AS same_ms`,
      ['sub_same_ms_', accountId, formId],
    );
    for (const limit of [1, 2, 3]) {
      expect(await pageThrough(adminKey, `/api/forms/${formId}/submissions`, 'submissions', limit)).toEqual(newestFirst('sub_same_ms_'));
    }
  });

  it('suppression entries created in one millisecond each appear on exactly one page', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Same millisecond suppressions');
    await t.app.get(DataSource).query(
      `INSERT INTO suppression_entries (id, account_id, email, reason, created_at)
       SELECT id, $2, id || '@example.org', 'manual', created_at FROM (${SAME_MILLISECOND_ROWS}) AS same_ms`,
      ['sup_same_ms_', accountId],
    );
    for (const limit of [1, 2, 3]) {
      expect(await pageThrough(adminKey, '/email/suppression', 'entries', limit)).toEqual(newestFirst('sup_same_ms_'));
    }
  });
});
