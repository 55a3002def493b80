import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

describe('collections', () => {
  let t: TestApp;
  let adminA: string;
  let adminB: string;

  const website = {
    slug: 'website',
    name: 'Website forms',
    forms: {
      'contact-us': {
        to: 'team@example.net',
        subject: 'New contact',
        replies: true,
        acknowledgment: { enabled: true, subject: 'Thanks' },
        spam_protection: { honeypot: '_gotcha' },
      },
      quote: { recipients: ['sales@example.net', 'boss@example.net'], subject: 'Quote request', rateLimit: 5 },
    },
  };

  beforeAll(async () => {
    t = await createTestApp();
    ({ adminKey: adminA } = await createAccount(t, 'Tenant A'));
    ({ adminKey: adminB } = await createAccount(t, 'Tenant B'));
  });
  afterAll(() => t.close());

  it('creates a collection of forms and lists it', async () => {
    const res = await t.http.post('/collections').set(bearer(adminA)).send(website).expect(201);
    expect(res.body).toMatchObject({
      slug: 'website',
      name: 'Website forms',
      projectId: null,
      forms: {
        'contact-us': {
          recipients: ['team@example.net'],
          subject: 'New contact',
          replies: true,
          acknowledgment: { enabled: true, subject: 'Thanks' },
          spam_protection: { honeypot: '_gotcha' },
        },
        quote: { recipients: ['sales@example.net', 'boss@example.net'], subject: 'Quote request', rateLimit: 5 },
      },
    });
    expect(res.body.id).toMatch(/^col_/);
    const list = await t.http.get('/collections').set(bearer(adminA)).expect(200);
    expect(list.body).toEqual({ collections: [res.body], count: 1 });
  });

  it('reads one form with the address browsers post to', async () => {
    const res = await t.http.get('/collections/website/forms/quote').set(bearer(adminA)).expect(200);
    expect(res.body).toEqual({
      collection: 'website',
      slug: 'quote',
      submitUrl: 'http://mailroom.test/c/website/quote',
      settings: { recipients: ['sales@example.net', 'boss@example.net'], subject: 'Quote request', rateLimit: 5 },
    });
    await t.http.get('/collections/website/forms/nope').set(bearer(adminA)).expect(404);
    await t.http.get('/collections/nope/forms/quote').set(bearer(adminA)).expect(404);
    await t.http.get('/collections/website/forms/constructor').set(bearer(adminA)).expect(404);
  });

  it('keeps collections per account: 409 for a slug the account has, 404 for another account', async () => {
    const dup = await t.http.post('/collections').set(bearer(adminA)).send({ slug: 'website' }).expect(409);
    expect(dup.body.error.code).toBe('CONFLICT');
    const other = await t.http.get('/collections/website/forms/quote').set(bearer(adminB)).expect(404);
    expect(other.body.error.code).toBe('NOT_FOUND');
    expect((await t.http.get('/collections').set(bearer(adminB)).expect(200)).body).toEqual({ collections: [], count: 0 });
    await t.http.post('/collections').set(bearer(adminB)).send({ slug: 'website' }).expect(201);
  });

  it('links a collection to a project of the account only', async () => {
    const project = await t.http.post('/projects').set(bearer(adminA)).send({ name: 'Main' }).expect(201);
    const linked = await t.http.post('/collections').set(bearer(adminA)).send({ slug: 'linked', projectId: project.body.id }).expect(201);
    expect(linked.body).toMatchObject({ slug: 'linked', name: 'linked', projectId: project.body.id, forms: {} });
    await t.http.post('/collections').set(bearer(adminB)).send({ slug: 'stolen', projectId: project.body.id }).expect(404);
    await t.http.post('/collections').set(bearer(adminA)).send({ slug: 'ghost', projectId: 'prj_unknown' }).expect(404);
  });

  it('answers 400 naming each bad form setting', async () => {
    const res = await t.http
      .post('/collections')
      .set(bearer(adminA))
      .send({
        slug: 'bad',
        forms: {
          norecipients: { subject: 'Hi' },
          badmail: { to: 'not-an-address' },
          'Bad Slug': { to: 'a@example.net' },
          extra: { to: 'a@example.net', spam_protection: { level: 'max' } },
        },
      })
      .expect(400);
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(
      ['forms.Bad Slug', 'forms.badmail.to', 'forms.extra.spam_protection.level', 'forms.norecipients.recipients'].sort(),
    );
    const slug = await t.http.post('/collections').set(bearer(adminA)).send({ slug: 'Not OK' }).expect(400);
    expect(slug.body.error.details.fields[0].field).toBe('slug');
    // A name the configuration file cannot hold would make the account's export fail to push back.
    for (const name of ['Two\nlines', '   ']) {
      const res = await t.http.post('/collections').set(bearer(adminA)).send({ slug: 'named', name }).expect(400);
      expect(res.body.error.details.fields[0]).toMatchObject({ field: 'name', message: 'name must be one line of text, not blank' });
    }
    await t.http.get('/collections/bad/forms/badmail').set(bearer(adminA)).expect(404);
  });

  it('is for admin keys only: 401 without a key, 403 for usage and public keys', async () => {
    const { key: usage } = await createKey(t, adminA, { keyType: 'usage' });
    const { key: publicToken } = await createKey(t, adminA, { keyType: 'public', domainScope: 'example.test' });
    for (const send of [
      () => t.http.get('/collections'),
      () => t.http.post('/collections').send({ slug: 'no' }),
      () => t.http.get('/collections/website/forms/quote'),
    ]) {
      expect((await send()).status).toBe(401);
      expect((await send().set(bearer(usage))).status).toBe(403);
      expect((await send().set('X-Public-Token', publicToken)).status).toBe(403);
    }
    const { key: readOnly } = await createKey(t, adminA, { keyType: 'admin', permissions: ['collections.read'] });
    await t.http.get('/collections/website/forms/quote').set(bearer(readOnly)).expect(200);
    await t.http.post('/collections').set(bearer(readOnly)).send({ slug: 'no' }).expect(403);
  });
});
