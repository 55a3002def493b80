import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { readConfigFile } from '../../src/cli/config-file-reader';
import { MakeProjectAndCollectionNamesOneLine1795787001000 } from '../../src/database/migrations/1795787001000-MakeProjectAndCollectionNamesOneLine';
import { DomainChanges } from '../../src/domains/domain-changes';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

const EXAMPLE = join(__dirname, '../../examples/mailroom.yml');

type Change = { action: string; kind: string; path: string; changes: { field: string; before: unknown; after: unknown }[] };

describe('declarative configuration (PUT /config, GET /config)', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let admin: string;
  /** The example file as the command line sends it: YAML parsed, html_file read. */
  let example: Record<string, unknown>;

  beforeAll(async () => {
    sink = await startSmtpSink();
    // New domains are verified at once, so the pushed forms take posts.
    t = await createTestApp({ env: { SMTP_URL: sink.url, DOMAIN_VERIFICATION: 'skip' } });
    ({ adminKey: admin } = await createAccount(t, 'Config'));
    example = await readConfigFile(EXAMPLE);
  });
  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const push = (key: string, file: unknown, query = '') =>
    t.http
      .put(`/config${query}`)
      .set(bearer(key))
      .send(file as object);
  const paths = (changes: Change[], action?: string) => changes.filter((c) => !action || c.action === action).map((c) => c.path);

  it('plans the example file without applying anything', async () => {
    const plan = await push(admin, example, '?dryRun=true').expect(200);
    expect(plan.body).toMatchObject({ applied: false, dryRun: true, prune: false, notInFile: [], notes: [] });
    expect(paths(plan.body.changes).sort()).toEqual(
      [
        'projects.acme',
        'settings.global_limits',
        'domains.example.com',
        'domains.example.com.forwarding.info',
        'domains.example.com.forwarding.sales',
        'domains.example.com.forwarding.*',
        'domains.example.com.forms.contact',
        'collections.website',
        'collections.website.forms.newsletter',
        'collections.website.forms.careers',
        'templates.contact-notification',
        'templates.contact-acknowledgment',
      ].sort(),
    );
    expect(plan.body.summary).toEqual({ create: 12, update: 0, delete: 0 });
    const rule = plan.body.changes.find((c: Change) => c.path === 'domains.example.com.forwarding.info');
    expect(rule).toEqual({
      action: 'create',
      kind: 'forwarding',
      path: 'domains.example.com.forwarding.info',
      changes: [{ field: 'to', before: null, after: ['owner@example.org'] }],
    });

    expect((await t.http.get('/config').set(bearer(admin)).expect(200)).body).toEqual({});
    expect((await t.http.get('/domains').set(bearer(admin)).expect(200)).body.count).toBe(0);
  });

  it('applies the file in one push, and pushing it again changes nothing', async () => {
    const applied = await push(admin, example).expect(200);
    expect(applied.body).toMatchObject({ applied: true, summary: { create: 12, update: 0, delete: 0 } });

    const domain = await t.http.get('/domains/example.com').set(bearer(admin)).expect(200);
    expect(domain.body.status).toBe('verified');
    expect(domain.body.settings.forwarding).toEqual({
      info: ['owner@example.org'],
      sales: ['owner@example.org', 'sales-team@example.org'],
      '*': ['catchall@example.org'],
    });
    const resolve = await t.http.get('/domains/example.com/forwarding/resolve?address=info@example.com').set(bearer(admin)).expect(200);
    expect(resolve.body.destinations).toEqual(['owner@example.org']);
    const collection = await t.http.get('/collections/website/forms/newsletter').set(bearer(admin)).expect(200);
    expect(collection.body.settings).toMatchObject({
      recipients: ['marketing@example.com', 'growth@example.com'],
      requiredFields: ['email'],
    });
    const template = await t.http.get('/email/templates/contact-notification').set(bearer(admin)).expect(200);
    expect(template.body).toMatchObject({ type: 'form', variables: { team: 'Acme support' } });
    expect(template.body.html).toBe(await readFile(join(__dirname, '../../examples/templates/contact-notification.html'), 'utf8'));
    const settings = await t.http.get('/settings').set(bearer(admin)).expect(200);
    expect(settings.body.global_limits).toEqual({ hourly: 1000, daily: 10000, monthly: 100000 });
    const projects = await t.http.get('/projects').set(bearer(admin)).expect(200);
    expect(projects.body.projects.map((p: { slug: string; name: string }) => [p.slug, p.name])).toEqual([['acme', 'Acme website']]);

    const again = await push(admin, example).expect(200);
    expect(again.body).toMatchObject({ applied: true, changes: [], summary: { create: 0, update: 0, delete: 0 } });
  });

  it('exports the pushed file back, and pushing the export changes nothing', async () => {
    const exported = (await t.http.get('/config').set(bearer(admin)).expect(200)).body;
    expect(exported).toEqual(example);
    const replan = await push(admin, exported, '?dryRun=true').expect(200);
    expect(replan.body.changes).toEqual([]);
  });

  it('drives the form’s notification and acknowledgment with the file’s templates (D-28)', async () => {
    await t.http
      .post('/example.com/contact')
      .set(bearer(admin))
      .send({ name: 'Ada', email: 'ada@example.org', message: 'Hello\nthere', subject: 'Pricing', company: 'Engines Ltd' })
      .expect(200);
    const notification = await sink.waitFor((m) => m.envelope.rcptTo.includes('team@example.com'));
    expect(notification.parsed!.subject).toBe('New message from Ada');
    expect(notification.parsed!.html).toContain('<blockquote>Hello<br>there</blockquote>');
    expect(notification.parsed!.html).toContain('<p>Acme support</p>');
    expect(notification.parsed!.text).toContain('Company: Engines Ltd');
    const ack = await sink.waitFor((m) => m.envelope.rcptTo.includes('ada@example.org'));
    expect(ack.parsed!.subject).toBe('Thanks for writing to Acme');
    expect(ack.parsed!.text).toContain('Acme support answers within one working day.');
  });

  it('plans updates with each field before and after, keeps what the file drops, and prunes it when asked', async () => {
    const changed = structuredClone(example) as any;
    changed.domains['example.com'].forms.contact.to = 'support@example.com';
    delete changed.domains['example.com'].forwarding.sales;
    delete changed.collections;
    changed.settings.global_limits.hourly = 500;

    const plan = await push(admin, changed, '?dryRun=true').expect(200);
    expect(plan.body.changes).toEqual([
      { action: 'update', kind: 'settings', path: 'settings.global_limits', changes: [{ field: 'hourly', before: 1000, after: 500 }] },
      {
        action: 'update',
        kind: 'form',
        path: 'domains.example.com.forms.contact',
        changes: [{ field: 'to', before: 'team@example.com', after: 'support@example.com' }],
      },
    ]);
    expect(plan.body.notInFile.sort()).toEqual(['collections.website', 'domains.example.com.forwarding.sales']);

    const kept = await push(admin, changed).expect(200);
    expect(kept.body.summary).toEqual({ create: 0, update: 2, delete: 0 });
    const collectionSlugs = async () =>
      (await t.http.get('/collections').set(bearer(admin)).expect(200)).body.collections.map((c: { slug: string }) => c.slug);
    expect(await collectionSlugs()).toEqual(['website']);

    const pruned = await push(admin, changed, '?prune=true').expect(200);
    expect(pruned.body.changes.map((c: Change) => [c.action, c.path])).toEqual([
      ['delete', 'domains.example.com.forwarding.sales'],
      ['delete', 'collections.website'],
    ]);
    expect(await collectionSlugs()).toEqual([]);
    const domain = await t.http.get('/domains/example.com').set(bearer(admin)).expect(200);
    expect(Object.keys(domain.body.settings.forwarding).sort()).toEqual(['*', 'info']);

    // Restores the example for the tests after this one.
    await push(admin, example, '?prune=true').expect(200);
  });

  it('refuses an invalid file with 400 naming every problem by its path, and applies nothing', async () => {
    const before = (await t.http.get('/config').set(bearer(admin)).expect(200)).body;
    const broken = structuredClone(example) as any;
    broken.domains['example.com'].forms.contact.to = 'not-an-address';
    broken.collections.website.forms.careers.template = 'missing-template';
    broken.domains['new.example'] = { forwarding: { info: 'nobody' } };
    broken.templates['contact-acknowledgment'].text = 'Hello {% if form.name %}';
    broken.settings.global_limits.daily = -1;
    broken.colours = ['blue'];

    const res = await push(admin, broken).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(
      [
        'colours',
        'collections.website.forms.careers.template',
        'domains.example.com.forms.contact.to',
        'domains.new.example.forwarding.info',
        'settings.global_limits.daily',
        'templates.contact-acknowledgment.text',
      ].sort(),
    );
    expect((await t.http.get('/config').set(bearer(admin)).expect(200)).body).toEqual(before);
    await t.http.get('/domains/new.example').set(bearer(admin)).expect(404);
  });

  it('refuses a domain another account has verified, by its path', async () => {
    const other = await createAccount(t, 'Other');
    const res = await push(other.adminKey, { domains: { 'example.com': {} } }).expect(400);
    expect(res.body.error.details.fields).toEqual([{ field: 'domains.example.com', message: 'is verified by another account' }]);
  });

  it('runs concurrent pushes of one account one after the other', async () => {
    const { adminKey } = await createAccount(t, 'Concurrent');
    const file = {
      templates: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`t${i}`, { type: 'form', subject: `s${i}`, text: `body ${i}` }])),
      domains: { 'concurrent.example': { forwarding: { info: 'a@example.org' } } },
    };
    const results = await Promise.all([push(adminKey, file), push(adminKey, file), push(adminKey, file)]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    // The first to take the lock creates everything; the others find it done.
    expect(results.map((r) => r.body.summary.create).sort((a, b) => b - a)).toEqual([22, 0, 0]);
    const exported = (await t.http.get('/config').set(bearer(adminKey)).expect(200)).body;
    expect(Object.keys(exported.templates)).toHaveLength(20);
  });

  describe('an account with several projects, built through the API', () => {
    let key: string;
    const projectIds: Record<string, string> = {};
    const collectionsNow = async () =>
      Object.fromEntries(
        (await t.http.get('/collections').set(bearer(key)).expect(200)).body.collections.map(
          (c: { slug: string; projectId: string | null }) => [c.slug, c.projectId],
        ),
      );

    beforeAll(async () => {
      ({ adminKey: key } = await createAccount(t, 'Several projects'));
      for (const [slug, name] of [
        ['alpha', 'Alpha site'],
        ['beta', 'Beta site'],
        ['spare', 'Spare'],
      ]) {
        projectIds[slug] = (await t.http.post('/projects').set(bearer(key)).send({ name, slug }).expect(201)).body.id;
      }
      const collection = (slug: string, projectId?: string) =>
        t.http
          .post('/collections')
          .set(bearer(key))
          .send({ slug, projectId, forms: { signup: { recipients: ['team@example.org'] } } })
          .expect(201);
      await collection('in-alpha', projectIds.alpha);
      await collection('also-alpha', projectIds.alpha);
      await collection('in-beta', projectIds.beta);
      await collection('loose');
      await t.http.post('/api/forms').set(bearer(key)).send({ name: 'Stand-alone', to: 'team@example.org', subject: 'Hi' }).expect(201);
    });

    it('exports every project and each collection’s project, and pushing the export back changes nothing', async () => {
      const exported = (await t.http.get('/config').set(bearer(key)).expect(200)).body;
      expect(exported.project).toBeUndefined();
      expect(exported.projects).toEqual({ alpha: { name: 'Alpha site' }, beta: { name: 'Beta site' }, spare: { name: 'Spare' } });
      expect(Object.fromEntries(Object.entries(exported.collections).map(([slug, c]: [string, any]) => [slug, c.project]))).toEqual({
        'also-alpha': 'alpha',
        'in-alpha': 'alpha',
        'in-beta': 'beta',
        loose: null,
      });
      for (const query of ['?dryRun=true', '?dryRun=true&prune=true']) {
        const plan = await push(key, exported, query).expect(200);
        expect(plan.body).toMatchObject({ changes: [], summary: { create: 0, update: 0, delete: 0 }, notInFile: [], notes: [] });
      }
    });

    it('moves one collection to another project when the file says so, and exports it there', async () => {
      const file = (await t.http.get('/config').set(bearer(key)).expect(200)).body;
      file.collections.loose.project = 'beta';
      const applied = await push(key, file).expect(200);
      expect(applied.body.changes).toEqual([
        { action: 'update', kind: 'collection', path: 'collections.loose', changes: [{ field: 'project', before: null, after: 'beta' }] },
      ]);
      expect(applied.body.summary).toEqual({ create: 0, update: 1, delete: 0 });
      expect((await collectionsNow()).loose).toBe(projectIds.beta);
      expect((await t.http.get('/config').set(bearer(key)).expect(200)).body.collections.loose.project).toBe('beta');
      expect((await push(key, file, '?dryRun=true').expect(200)).body.changes).toEqual([]);
    });

    it('creates a project the file lists and never prunes one a collection is still in', async () => {
      const file = {
        projects: { gamma: { name: 'Gamma' } },
        collections: { 'in-alpha': { project: 'gamma', forms: { signup: { to: 'team@example.org' } } }, 'also-alpha': {} },
      };
      const plan = await push(key, file, '?dryRun=true&prune=true').expect(200);
      expect(plan.body.changes.map((c: Change) => [c.action, c.path])).toEqual([
        ['create', 'projects.gamma'],
        ['update', 'collections.in-alpha'],
        ['delete', 'projects.beta'],
        ['delete', 'projects.spare'],
        ['delete', 'collections.also-alpha.forms.signup'],
        ['delete', 'collections.in-beta'],
        ['delete', 'collections.loose'],
      ]);
      expect(plan.body.notes).toEqual([expect.stringMatching(/^projects\.alpha is not in the file but is kept: collections also-alpha/)]);

      const applied = await push(key, { projects: file.projects, collections: { 'in-alpha': { project: 'gamma' } } }).expect(200);
      expect(applied.body.summary).toEqual({ create: 1, update: 1, delete: 0 });
      const projects = (await t.http.get('/projects').set(bearer(key)).expect(200)).body.projects;
      const gamma = projects.find((p: { slug: string }) => p.slug === 'gamma');
      expect(gamma).toMatchObject({ name: 'Gamma' });
      expect((await collectionsNow())['in-alpha']).toBe(gamma.id);
    });

    it('refuses through the API a project name the file could not hold (blank, several lines)', async () => {
      for (const name of ['   ', 'Two\nlines']) {
        const res = await t.http.post('/projects').set(bearer(key)).send({ name, slug: 'odd' }).expect(400);
        expect(res.body.error.details.fields).toEqual([{ field: 'name', message: 'name must be one line of text, not blank' }]);
      }
    });

    it('refuses a collection naming a project neither the file nor the account has, by its path', async () => {
      const before = (await t.http.get('/config').set(bearer(key)).expect(200)).body;
      const res = await push(key, { collections: { loose: { project: 'nowhere' }, 'in-beta': { project: 'Not a slug' } } }).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.fields).toEqual([
        { field: 'collections.in-beta.project', message: expect.stringContaining('must be') },
        { field: 'collections.loose.project', message: 'no project nowhere in the file (project, projects) or the account' },
      ]);
      expect((await t.http.get('/config').set(bearer(key)).expect(200)).body).toEqual(before);
    });
  });

  it('takes names Object.prototype has as any other: a project and a collection `constructor`, a template `toString`', async () => {
    const { adminKey: key } = await createAccount(t, 'Prototype names');
    const form = { signup: { to: 'team@example.org', template: 'toString' } };
    const missing = await push(key, { collections: { constructor: { forms: form } } }).expect(400);
    expect(missing.body.error.details.fields).toEqual([
      { field: 'collections.constructor.forms.signup.template', message: 'no template named toString in the file or the account' },
    ]);

    const file = {
      project: { name: 'Main', slug: 'constructor' },
      collections: { constructor: { name: 'Signups', forms: form } },
      templates: { toString: { subject: 'New signup', text: 'From {{ form.email }}' } },
    };
    const applied = await push(key, file).expect(200);
    expect(applied.body.changes.map((c: Change) => [c.action, c.path])).toEqual([
      ['create', 'projects.constructor'],
      ['create', 'collections.constructor'],
      ['create', 'collections.constructor.forms.signup'],
      ['create', 'templates.toString'],
    ]);
    const exported = (await t.http.get('/config').set(bearer(key)).expect(200)).body;
    expect(exported).toMatchObject({ ...file, collections: { constructor: { name: 'Signups', forms: { signup: form.signup } } } });
    expect((await push(key, exported, '?dryRun=true&prune=true').expect(200)).body.changes).toEqual([]);
  });

  it('refuses posts from a domain a push removes from the moment the push commits', async () => {
    const { adminKey: key } = await createAccount(t, 'Pruned domain');
    await push(key, { domains: { 'pruned.test': {} } }).expect(200);
    const form = await t.http
      .post('/api/forms')
      .set(bearer(key))
      .send({ name: 'Contact', to: 'owner@example.org', rateLimit: 1000 })
      .expect(201);
    const post = async () =>
      (
        await t.http
          .post(`/f/${form.body.id}`)
          .set({ Accept: 'application/json', Origin: 'https://www.pruned.test' })
          .send({ email: 'ann@example.org', message: 'hello' })
      ).status;
    // Accepted, and the account's verified domains are now cached.
    expect(await post()).toBe(200);

    // A post right after the caches are told: told before the push's transaction commits, it would read the domain
    // still there and cache it again, accepting posts for another 10 s.
    const changes = t.app.get(DomainChanges);
    const tell = changes.changed.bind(changes);
    const postedWhenTold: number[] = [];
    const spy = jest.spyOn(changes, 'changed').mockImplementation(async (accountId, name) => {
      await tell(accountId, name);
      postedWhenTold.push(await post());
    });
    try {
      await push(key, {}, '?prune=true').expect(200);
    } finally {
      spy.mockRestore();
    }
    expect(postedWhenTold).toEqual([403]);
    expect(await post()).toBe(403);
  });

  it('makes names made before they had to be one line fit the file (migration MakeProjectAndCollectionNamesOneLine)', async () => {
    const { adminKey: key, accountId } = await createAccount(t, 'Old names');
    const dataSource = t.app.get(DataSource);
    const project = `INSERT INTO projects (id, account_id, name, slug) VALUES ($1, $2, $3, $4)`;
    await dataSource.query(project, ['prj_oldnames_two', accountId, 'Two\r\nlines\n', 'two']);
    await dataSource.query(project, ['prj_oldnames_blank', accountId, ' \t\n ', 'blank']);
    await dataSource.query(`INSERT INTO collections (id, account_id, slug, name) VALUES ($1, $2, $3, $4)`, [
      'col_oldnames_web',
      accountId,
      'web',
      'Line\rone',
    ]);
    const runner = dataSource.createQueryRunner();
    try {
      await new MakeProjectAndCollectionNamesOneLine1795787001000().up(runner);
    } finally {
      await runner.release();
    }
    const exported = (await t.http.get('/config').set(bearer(key)).expect(200)).body;
    expect(exported.projects).toEqual({ two: { name: 'Two lines' }, blank: { name: 'blank' } });
    expect(exported.collections).toEqual({ web: { name: 'Line one', project: null } });
    expect((await push(key, exported, '?dryRun=true&prune=true').expect(200)).body.changes).toEqual([]);
  });

  it('is for admin keys holding every write permission it needs', async () => {
    const { key: usage } = await createKey(t, admin, { keyType: 'usage' });
    await push(usage, example).expect(403);
    await t.http.get('/config').set(bearer(usage)).expect(403);
    const { key: narrow } = await createKey(t, admin, { keyType: 'admin', permissions: ['domains.read', 'domains.write'] });
    const res = await push(narrow, example).expect(403);
    expect(res.body.error.message).toMatch(/lacks the permissions projects\.write, collections\.write, templates\.write, settings\.write/);
    await t.http.put('/config').send(example).expect(401);
    const badQuery = await push(admin, example, '?dryRun=maybe').expect(400);
    expect(badQuery.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['dryRun']);
  });
});
