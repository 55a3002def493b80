import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

describe('projects', () => {
  let t: TestApp;
  let adminA: string;
  let adminB: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ adminKey: adminA } = await createAccount(t, 'Tenant A'));
    ({ adminKey: adminB } = await createAccount(t, 'Tenant B'));
  });
  afterAll(() => t.close());

  it('creates projects with a slug made from the name or given, and lists them as {projects, count}', async () => {
    const made = await t.http.post('/projects').set(bearer(adminA)).send({ name: 'Marketing Site (2026)' }).expect(201);
    expect(made.body).toMatchObject({ name: 'Marketing Site (2026)', slug: 'marketing-site-2026' });
    expect(made.body.id).toMatch(/^prj_/);
    const given = await t.http.post('/projects').set(bearer(adminA)).send({ name: 'Shop', slug: 'store' }).expect(201);
    expect(given.body.slug).toBe('store');

    const list = await t.http.get('/projects').set(bearer(adminA)).expect(200);
    expect(list.body).toEqual({ projects: [made.body, given.body], count: 2 });
  });

  it('answers 409 for a slug the account has, while another account may use it', async () => {
    await t.http.post('/projects').set(bearer(adminA)).send({ name: 'Dup', slug: 'dup' }).expect(201);
    const res = await t.http.post('/projects').set(bearer(adminA)).send({ name: 'Dup' }).expect(409);
    expect(res.body.error.code).toBe('CONFLICT');
    await t.http.post('/projects').set(bearer(adminB)).send({ name: 'Dup' }).expect(201);
    const listB = await t.http.get('/projects').set(bearer(adminB)).expect(200);
    expect(listB.body.projects.map((p: { slug: string }) => p.slug)).toEqual(['dup']);
  });

  it.each([
    [{}, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 'x', slug: 'Not A Slug' }, 'slug'],
    [{ name: '!!!' }, 'slug'],
    [{ name: 'x', colour: 'blue' }, 'colour'],
  ])('refuses %j with 400 naming %s', async (body, field) => {
    const res = await t.http.post('/projects').set(bearer(adminA)).send(body).expect(400);
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
  });

  it('is for admin keys only: 401 without a key, 403 for usage and public keys', async () => {
    const { key: usage } = await createKey(t, adminA, { keyType: 'usage' });
    const { key: publicToken } = await createKey(t, adminA, { keyType: 'public', domainScope: 'example.test' });
    for (const send of [() => t.http.get('/projects'), () => t.http.post('/projects').send({ name: 'No' })]) {
      expect((await send()).status).toBe(401);
      expect((await send().set(bearer(usage))).status).toBe(403);
      expect((await send().set('X-Public-Token', publicToken)).status).toBe(403);
    }
    const { key: readOnly } = await createKey(t, adminA, { keyType: 'admin', permissions: ['projects.read'] });
    await t.http.get('/projects').set(bearer(readOnly)).expect(200);
    await t.http.post('/projects').set(bearer(readOnly)).send({ name: 'No' }).expect(403);
  });
});
