import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

describe('templates', () => {
  let t: TestApp;
  let adminKey: string;
  let usageKey: string;
  let otherAdminKey: string;

  beforeAll(async () => {
    t = await createTestApp();
    adminKey = (await createAccount(t, 'Owner')).adminKey;
    usageKey = (await createKey(t, adminKey, { keyType: 'usage' })).key;
    otherAdminKey = (await createAccount(t, 'Other')).adminKey;
  });
  afterAll(() => t.close());

  const welcome = {
    name: 'welcome',
    description: 'After sign-up',
    subject: 'Welcome, {{name}}!',
    html:
      '<h1>{{subject}}</h1>{{#premium}}<p>Premium member</p>{{/premium}}{{^premium}}<p>Free plan</p>{{/premium}}' +
      '<ul>{{#items}}<li>{{title}} for {{name}}</li>{{/items}}</ul><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
    text: 'Hi {{name}}{{#items}}\n- {{title}}{{/items}}',
  };

  it('stores, reads, lists, changes and deletes a template', async () => {
    const created = await t.http.post('/email/templates').set(bearer(usageKey)).send(welcome).expect(201);
    expect(created.body).toEqual({
      ...welcome,
      type: 'email',
      variables: null,
      id: expect.stringMatching(/^tpl_[0-9A-Za-z]{22}$/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    await t.http.post('/email/templates').set(bearer(adminKey)).send({ name: 'receipt', subject: 'Receipt', text: 'Paid' }).expect(201);
    const list = await t.http.get('/email/templates').set(bearer(adminKey)).expect(200);
    expect(list.body.count).toBe(2);
    expect(list.body.templates.map((tpl: { name: string }) => tpl.name)).toEqual(['receipt', 'welcome']);

    const read = await t.http.get('/email/templates/welcome').set(bearer(usageKey)).expect(200);
    expect(read.body).toEqual(created.body);

    const changed = await t.http
      .put('/email/templates/receipt')
      .set(bearer(adminKey))
      .send({ subject: 'Your receipt {{number}}', html: '<p>{{number}}</p>', text: null })
      .expect(200);
    expect(changed.body).toMatchObject({ name: 'receipt', subject: 'Your receipt {{number}}', html: '<p>{{number}}</p>', text: null });
    const rendered = await t.http
      .post('/email/templates/receipt/render')
      .set(bearer(adminKey))
      .send({ variables: { number: 42 } })
      .expect(200);
    expect(rendered.body).toEqual({ subject: 'Your receipt 42', html: '<p>42</p>', text: null });

    const renamed = await t.http.put('/email/templates/receipt').set(bearer(adminKey)).send({ name: 'invoice' }).expect(200);
    expect(renamed.body.name).toBe('invoice');
    await t.http.get('/email/templates/receipt').set(bearer(adminKey)).expect(404);

    const deleted = await t.http.delete('/email/templates/invoice').set(bearer(adminKey)).expect(200);
    expect(deleted.body).toEqual({ success: true, message: 'Template invoice deleted' });
    const gone = await t.http.get('/email/templates/invoice').set(bearer(adminKey)).expect(404);
    expect(gone.body.error.code).toBe('NOT_FOUND');
    await t.http.delete('/email/templates/invoice').set(bearer(adminKey)).expect(404);
  });

  it('renders sections, loops and the always-defined placeholders, escaping HTML in the html part only', async () => {
    const res = await t.http
      .post('/email/templates/welcome/render')
      .set(bearer(usageKey))
      .send({ variables: { name: 'Ada <script>&', premium: true, items: [{ title: 'Engines' }, { title: '"Looms"' }] } })
      .expect(200);
    expect(res.body).toEqual({
      subject: 'Welcome, Ada <script>&!',
      html:
        '<h1>Welcome, Ada &lt;script&gt;&amp;!</h1><p>Premium member</p>' +
        '<ul><li>Engines for Ada &lt;script&gt;&amp;</li><li>&quot;Looms&quot; for Ada &lt;script&gt;&amp;</li></ul>' +
        '<a href="">Unsubscribe</a>',
      text: 'Hi Ada <script>&\n- Engines\n- "Looms"',
    });

    const plain = await t.http
      .post('/email/templates/welcome/render')
      .set(bearer(usageKey))
      .send({ variables: { name: 'Bo', unsubscribeUrl: 'https://mailroom.test/u/abc' } })
      .expect(200);
    expect(plain.body.html).toBe('<h1>Welcome, Bo!</h1><p>Free plan</p><ul></ul><a href="https://mailroom.test/u/abc">Unsubscribe</a>');

    const noBody = await t.http.post('/email/templates/welcome/render').set(bearer(usageKey)).expect(200);
    expect(noBody.body.subject).toBe('Welcome, !');
  });

  it('gives its default variables to every rendering, the caller’s own winning; null removes them', async () => {
    const defaults = {
      name: 'signature',
      subject: 'From {{team}}',
      text: '{{greeting}}, {{name}}. {{team}}',
      variables: { team: 'Acme', greeting: 'Hello' },
    };
    const created = await t.http.post('/email/templates').set(bearer(adminKey)).send(defaults).expect(201);
    expect(created.body.variables).toEqual({ team: 'Acme', greeting: 'Hello' });
    const render = (variables: object) =>
      t.http.post('/email/templates/signature/render').set(bearer(adminKey)).send({ variables }).expect(200);
    expect((await render({ name: 'Ada' })).body).toMatchObject({ subject: 'From Acme', text: 'Hello, Ada. Acme' });
    expect((await render({ name: 'Ada', greeting: 'Hi' })).body.text).toBe('Hi, Ada. Acme');

    await t.http.put('/email/templates/signature').set(bearer(adminKey)).send({ variables: null }).expect(200);
    expect((await render({ name: 'Ada' })).body.text).toBe(', Ada. ');
    const tooBig = { ...defaults, name: 'big', variables: { blob: 'x'.repeat(70 * 1024) } };
    const refused = await t.http.post('/email/templates').set(bearer(adminKey)).send(tooBig).expect(400);
    expect(refused.body.error.details.fields).toEqual([{ field: 'variables', message: 'at most 64 KB as JSON' }]);
  });

  it('refuses a syntax error at save time, naming the part and the line', async () => {
    const res = await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({ name: 'broken', subject: 'Hi', html: '<p>\n{{#if premium}}yes\n{{/unless}}</p>' })
      .expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.fields).toEqual([{ field: 'html', message: expect.stringMatching(/^line 2: if doesn't match unless/) }]);
    await t.http.get('/email/templates/broken').set(bearer(adminKey)).expect(404);

    const unknownHelper = await t.http
      .put('/email/templates/welcome')
      .set(bearer(adminKey))
      .send({ text: 'Hi {{uppercase name}}' })
      .expect(400);
    expect(unknownHelper.body.error.details.fields).toEqual([{ field: 'text', message: 'line 1: unknown helper uppercase' }]);
    const unchanged = await t.http.get('/email/templates/welcome').set(bearer(adminKey)).expect(200);
    expect(unchanged.body.text).toBe(welcome.text);

    const subject = await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({ name: 'b2', subject: 'Hi {{name', text: 'x' })
      .expect(400);
    expect(subject.body.error.details.fields[0]).toEqual({ field: 'subject', message: expect.stringMatching(/^line 1: syntax error/) });
  });

  it('validates names and required parts', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: '-bad', subject: 's', text: 't' }, 'name'],
      [{ name: 'a b', subject: 's', text: 't' }, 'name'],
      [{ name: 'x'.repeat(101), subject: 's', text: 't' }, 'name'],
      [{ name: 'ok', text: 't' }, 'subject'],
      [{ name: 'ok', subject: 's' }, 'html'],
      [{ name: 'ok', subject: 's', text: 't', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await t.http.post('/email/templates').set(bearer(adminKey)).send(body);
      expect({ status: res.status, fields: res.body.error?.details?.fields?.map((f: { field: string }) => f.field) }).toEqual({
        status: 400,
        fields: expect.arrayContaining([field]),
      });
    }
    await t.http.post('/email/templates').set(bearer(adminKey)).send({ name: 'v1.0_final-2', subject: 's', text: 't' }).expect(201);
    const removeBoth = await t.http.put('/email/templates/v1.0_final-2').set(bearer(adminKey)).send({ text: null }).expect(400);
    expect(removeBoth.body.error.details.fields[0].field).toBe('html');
  });

  it('answers 409 for a name the account uses already, also on rename', async () => {
    const res = await t.http.post('/email/templates').set(bearer(adminKey)).send({ name: 'welcome', subject: 's', text: 't' }).expect(409);
    expect(res.body.error.code).toBe('CONFLICT');
    await t.http.post('/email/templates').set(bearer(adminKey)).send({ name: 'second', subject: 's', text: 't' }).expect(201);
    await t.http.put('/email/templates/second').set(bearer(adminKey)).send({ name: 'welcome' }).expect(409);
  });

  it('keeps accounts apart: another account sees 404 and may use the same name', async () => {
    await t.http.get('/email/templates/welcome').set(bearer(otherAdminKey)).expect(404);
    await t.http.put('/email/templates/welcome').set(bearer(otherAdminKey)).send({ subject: 'x' }).expect(404);
    await t.http.post('/email/templates/welcome/render').set(bearer(otherAdminKey)).send({}).expect(404);
    await t.http.delete('/email/templates/welcome').set(bearer(otherAdminKey)).expect(404);
    const list = await t.http.get('/email/templates').set(bearer(otherAdminKey)).expect(200);
    expect(list.body).toEqual({ templates: [], count: 0 });
    await t.http.post('/email/templates').set(bearer(otherAdminKey)).send({ name: 'welcome', subject: 'Mine', text: 't' }).expect(201);
    const own = await t.http
      .post('/email/templates/welcome/render')
      .set(bearer(adminKey))
      .send({ variables: { name: 'A' } })
      .expect(200);
    expect(own.body.subject).toBe('Welcome, A!');
  });

  it('serves a changed template at once, not a cached compilation', async () => {
    await t.http.post('/email/templates').set(bearer(adminKey)).send({ name: 'cached', subject: 'one {{v}}', text: 't' }).expect(201);
    const first = await t.http
      .post('/email/templates/cached/render')
      .set(bearer(adminKey))
      .send({ variables: { v: 1 } })
      .expect(200);
    expect(first.body.subject).toBe('one 1');
    await t.http.put('/email/templates/cached').set(bearer(adminKey)).send({ subject: 'two {{v}}' }).expect(200);
    const second = await t.http
      .post('/email/templates/cached/render')
      .set(bearer(adminKey))
      .send({ variables: { v: 2 } })
      .expect(200);
    expect(second.body.subject).toBe('two 2');
  });

  it('documents the template and suppression routes in /docs', async () => {
    const res = await t.http.get('/docs-json').expect(200);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/email/templates',
        '/email/templates/{name}',
        '/email/templates/{name}/render',
        '/email/suppression',
        '/email/suppression/check',
        '/email/suppression/{email}',
      ]),
    );
    expect(res.body.components.schemas.CreateTemplateDto.properties.html.description).toMatch(/HTML-escaped/);
  });

  it('needs a key: none is 401, a public key or a key without the permission 403', async () => {
    await t.http.get('/email/templates').expect(401);
    await t.http.post('/email/templates').send(welcome).expect(401);
    const publicKey = (await createKey(t, adminKey, { keyType: 'public', domainScope: 'example.com' })).key;
    const asPublic = await t.http.get('/email/templates').set('X-Public-Token', publicKey);
    expect(asPublic.status).toBe(403);
    const readOnly = (await createKey(t, adminKey, { keyType: 'usage', permissions: ['templates.read'] })).key;
    await t.http.get('/email/templates/welcome').set(bearer(readOnly)).expect(200);
    await t.http.post('/email/templates/welcome/render').set(bearer(readOnly)).send({}).expect(200);
    const write = await t.http
      .post('/email/templates')
      .set(bearer(readOnly))
      .send({ ...welcome, name: 'nope' });
    expect(write.status).toBe(403);
    const sendOnly = (await createKey(t, adminKey, { keyType: 'usage', permissions: ['email.send'] })).key;
    await t.http.get('/email/templates').set(bearer(sendOnly)).expect(403);
  });
});
