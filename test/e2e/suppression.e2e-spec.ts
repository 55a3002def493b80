import { SuppressionService } from '../../src/suppression/suppression.service';
import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

describe('suppression', () => {
  let t: TestApp;
  let accountId: string;
  let adminKey: string;
  let usageKey: string;
  let otherAdminKey: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ accountId, adminKey } = await createAccount(t, 'Owner'));
    usageKey = (await createKey(t, adminKey, { keyType: 'usage' })).key;
    otherAdminKey = (await createAccount(t, 'Other')).adminKey;
  });
  afterAll(() => t.close());

  it('adds an address, checks it case-insensitively and removes it', async () => {
    const added = await t.http
      .post('/email/suppression')
      .set(bearer(usageKey))
      .send({ email: 'Ada@Example.ORG', reason: 'bounced' })
      .expect(201);
    expect(added.body).toEqual({
      success: true,
      created: true,
      entry: {
        id: expect.stringMatching(/^sup_[0-9A-Za-z]{22}$/),
        email: 'ada@example.org',
        reason: 'bounced',
        source: 'api',
        createdAt: expect.any(String),
      },
    });

    const check = await t.http.get('/email/suppression/check').query({ email: 'ADA@example.org' }).set(bearer(usageKey)).expect(200);
    expect(check.body).toEqual({ email: 'ada@example.org', suppressed: true, reason: 'bounced', createdAt: added.body.entry.createdAt });

    const removed = await t.http
      .delete(`/email/suppression/${encodeURIComponent('ADA@example.org')}`)
      .set(bearer(usageKey))
      .expect(200);
    expect(removed.body).toEqual({ success: true, message: 'ada@example.org removed from the suppression list' });
    const after = await t.http.get('/email/suppression/check?email=ada%40example.org').set(bearer(usageKey)).expect(200);
    expect(after.body).toEqual({ email: 'ada@example.org', suppressed: false });

    const again = await t.http.delete('/email/suppression/ada%40example.org').set(bearer(usageKey)).expect(404);
    expect(again.body.error.code).toBe('NOT_FOUND');
  });

  it('defaults the reason to manual and keeps the first entry on a duplicate', async () => {
    const first = await t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'dup@example.org' }).expect(201);
    expect(first.body.entry.reason).toBe('manual');
    const second = await t.http
      .post('/email/suppression')
      .set(bearer(adminKey))
      .send({ email: 'DUP@example.org', reason: 'complained' })
      .expect(200);
    expect(second.body).toEqual({ success: true, created: false, entry: first.body.entry });
    const list = await t.http.get('/email/suppression').query({ reason: 'manual' }).set(bearer(adminKey)).expect(200);
    expect(list.body.entries.filter((e: { email: string }) => e.email === 'dup@example.org')).toHaveLength(1);
  });

  it('pages through the list newest first with a cursor', async () => {
    const { adminKey: key } = await createAccount(t, 'Pager');
    const addresses = Array.from({ length: 7 }, (_, i) => `user${i}@example.org`);
    for (const email of addresses) {
      await t.http.post('/email/suppression').set(bearer(key)).send({ email, reason: 'unsubscribed' }).expect(201);
    }
    const seen: { email: string; createdAt: string }[] = [];
    let cursor: string | undefined;
    const pageSizes: number[] = [];
    do {
      const res = await t.http
        .get('/email/suppression')
        .query({ limit: 3, ...(cursor ? { cursor } : {}) })
        .set(bearer(key))
        .expect(200);
      expect(res.body.count).toBe(7);
      seen.push(...res.body.entries);
      pageSizes.push(res.body.entries.length);
      cursor = res.body.nextCursor ?? undefined;
    } while (cursor);
    expect(pageSizes).toEqual([3, 3, 1]);
    expect(seen.map((e) => e.email).sort()).toEqual([...addresses].sort());
    const times = seen.map((e) => e.createdAt);
    expect(times).toEqual([...times].sort().reverse());

    const filtered = await t.http.get('/email/suppression?reason=bounced').set(bearer(key)).expect(200);
    expect(filtered.body).toEqual({ entries: [], count: 0, nextCursor: null });
  });

  it('refuses bad input with 400', async () => {
    const cases: [() => Promise<{ status: number; body: { error?: { details?: { fields?: { field: string }[] } } } }>, string][] = [
      [() => t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'not-an-address' }), 'email'],
      [() => t.http.post('/email/suppression').set(bearer(adminKey)).send({}), 'email'],
      [() => t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'a@example.org', reason: 'bored' }), 'reason'],
      [() => t.http.get('/email/suppression/check?email=nope').set(bearer(adminKey)), 'email'],
      [() => t.http.get('/email/suppression/check').set(bearer(adminKey)), 'email'],
      [() => t.http.get('/email/suppression?limit=0').set(bearer(adminKey)), 'limit'],
      [() => t.http.get('/email/suppression?limit=101').set(bearer(adminKey)), 'limit'],
      [() => t.http.get('/email/suppression?cursor=garbage').set(bearer(adminKey)), 'cursor'],
    ];
    for (const [call, field] of cases) {
      const res = await call();
      expect({ status: res.status, fields: res.body.error?.details?.fields?.map((f) => f.field) }).toEqual({
        status: 400,
        fields: expect.arrayContaining([field]),
      });
    }
  });

  it('keeps accounts apart', async () => {
    await t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'mine@example.org' }).expect(201);
    const check = await t.http.get('/email/suppression/check?email=mine@example.org').set(bearer(otherAdminKey)).expect(200);
    expect(check.body.suppressed).toBe(false);
    await t.http.delete('/email/suppression/mine@example.org').set(bearer(otherAdminKey)).expect(404);
    const list = await t.http.get('/email/suppression').set(bearer(otherAdminKey)).expect(200);
    expect(list.body).toEqual({ entries: [], count: 0, nextCursor: null });
    const stillMine = await t.http.get('/email/suppression/check?email=mine@example.org').set(bearer(adminKey)).expect(200);
    expect(stillMine.body.suppressed).toBe(true);
  });

  it('answers the send pipeline in one call for many recipients', async () => {
    const service = t.app.get(SuppressionService);
    await service.add(accountId, 'Bounce@Example.org', 'bounced', 'msg_test');
    await service.add(accountId, 'bounce@example.org', 'complained');
    const entry = await service.add(accountId, 'gone@example.org', 'unsubscribed');
    expect(entry).toMatchObject({ email: 'gone@example.org', reason: 'unsubscribed', source: null });

    const found = await service.suppressedAmong(accountId, ['BOUNCE@example.org', 'fresh@example.org', 'Gone@example.org']);
    expect([...found].sort()).toEqual(['bounce@example.org', 'gone@example.org']);
    expect(await service.suppressedAmong(accountId, [])).toEqual(new Set());
    expect(await service.isSuppressed(accountId, 'bounce@EXAMPLE.org')).toBe(true);
    expect(await service.isSuppressed(accountId, 'fresh@example.org')).toBe(false);

    const check = await t.http.get('/email/suppression/check?email=bounce@example.org').set(bearer(adminKey)).expect(200);
    expect(check.body.reason).toBe('bounced');
  });

  it('answers concurrent lookups of different accounts, sharing one query, each with its own list', async () => {
    const service = t.app.get(SuppressionService);
    const other = await createAccount(t, 'Concurrent');
    await service.add(accountId, 'shared@example.org', 'bounced');
    await service.add(other.accountId, 'theirs@example.org', 'complained');
    const addresses = ['shared@example.org', 'theirs@example.org', 'nobody@example.org'];
    const [mine, theirs, again] = await Promise.all([
      service.suppressedAmong(accountId, addresses),
      service.suppressedAmong(other.accountId, addresses),
      service.suppressedAmong(accountId, ['SHARED@example.org']),
    ]);
    expect([...mine]).toEqual(['shared@example.org']);
    expect([...theirs]).toEqual(['theirs@example.org']);
    expect([...again]).toEqual(['shared@example.org']);

    // A value PostgreSQL refuses fails its own lookup, not the others that shared its query.
    const outcomes = await Promise.allSettled([
      service.suppressedAmong(accountId, addresses),
      service.suppressedAmong(other.accountId, ['nul\u0000@example.org']),
      service.suppressedAmong(other.accountId, addresses),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect([...(outcomes[2] as PromiseFulfilledResult<Set<string>>).value]).toEqual(['theirs@example.org']);
  });

  it('needs a key: none is 401, a public key or a key without the permission 403', async () => {
    await t.http.get('/email/suppression').expect(401);
    await t.http.post('/email/suppression').send({ email: 'x@example.org' }).expect(401);
    const publicKey = (await createKey(t, adminKey, { keyType: 'public', domainScope: 'example.com' })).key;
    await t.http.get('/email/suppression/check?email=x@example.org').set('X-Public-Token', publicKey).expect(403);
    const readOnly = (await createKey(t, adminKey, { keyType: 'usage', permissions: ['suppression.read'] })).key;
    await t.http.get('/email/suppression').set(bearer(readOnly)).expect(200);
    await t.http.post('/email/suppression').set(bearer(readOnly)).send({ email: 'x@example.org' }).expect(403);
    await t.http.delete('/email/suppression/x@example.org').set(bearer(readOnly)).expect(403);
  });
});
