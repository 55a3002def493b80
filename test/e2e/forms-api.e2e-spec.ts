import { randomBytes } from 'node:crypto';
import { bearer, createAccount, createKey } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

/** /api/forms, stored submissions and their CSV export, and instant forms with their confirmation (D-29). */
describe('forms API and instant forms', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let admin: { accountId: string; adminKey: string };
  let other: { accountId: string; adminKey: string };
  const site = 'https://www.forms-api.test';
  const unique = () => randomBytes(5).toString('hex');
  const json = { Accept: 'application/json', Origin: site };

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, PUBLIC_URL: 'http://forms.mailroom.test' } });
    admin = await createAccount(t, 'Acme');
    other = await createAccount(t, 'Other');
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const mailTo = (address: string, marker?: string) => (mail: ReceivedMail) =>
    mail.envelope.rcptTo.includes(address) && (marker === undefined || (mail.parsed?.text ?? '').includes(marker));

  describe('/api/forms', () => {
    it('creates, lists, reads, changes and deletes a form; a high rateLimit is kept', async () => {
      const created = await t.http
        .post('/api/forms')
        .set(bearer(admin.adminKey))
        .send({ name: 'Contact', to: 'owner@acme.example', subject: 'New message', rateLimit: 100_000_000, allowedOrigins: [site] })
        .expect(201);
      expect(created.body).toMatchObject({
        id: expect.stringMatching(/^frm_/),
        name: 'Contact',
        submissions: 0,
        kind: 'standalone',
        confirmed: true,
        submitUrl: `http://forms.mailroom.test/f/${created.body.id}`,
        settings: { recipients: ['owner@acme.example'], subject: 'New message', rateLimit: 100_000_000 },
        created_at: expect.any(String),
      });
      const id = created.body.id;
      await t.http.post(`/f/${id}`).set(json).send({ message: 'one' }).expect(200);

      const list = await t.http.get('/api/forms').set(bearer(admin.adminKey)).expect(200);
      expect(list.body.count).toBe(list.body.forms.length);
      expect(list.body.forms.find((f: { id: string }) => f.id === id)).toMatchObject({ submissions: 1 });

      const changed = await t.http
        .patch(`/api/forms/${id}`)
        .set(bearer(admin.adminKey))
        .send({ subject: null, redirect: 'https://acme.example/thanks' })
        .expect(200);
      expect(changed.body.settings.subject).toBeUndefined();
      expect(changed.body.settings.redirect).toBe('https://acme.example/thanks');
      expect((await t.http.get(`/api/forms/${id}`).set(bearer(admin.adminKey)).expect(200)).body.settings.rateLimit).toBe(100_000_000);

      // Another account's form is a 404, like an unknown one.
      await t.http.get(`/api/forms/${id}`).set(bearer(other.adminKey)).expect(404);
      await t.http.patch(`/api/forms/${id}`).set(bearer(other.adminKey)).send({ subject: 'x' }).expect(404);
      await t.http.delete(`/api/forms/${id}`).set(bearer(other.adminKey)).expect(404);

      await t.http.delete(`/api/forms/${id}`).set(bearer(admin.adminKey)).expect(200);
      await t.http.get(`/api/forms/${id}`).set(bearer(admin.adminKey)).expect(404);
      await t.http.post(`/f/${id}`).set(json).send({ message: 'gone' }).expect(404);
    });

    it('names every bad setting in one 400', async () => {
      const res = await t.http
        .post('/api/forms')
        .set(bearer(admin.adminKey))
        .send({
          name: 'Bad',
          to: ['ok@acme.example', 'nope'],
          redirect: 'javascript:alert(1)',
          spam_protection: { level: 'extreme' },
          requiredFields: ['a b'],
        })
        .expect(400);
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(
        ['redirect', 'requiredFields[0]', 'spam_protection.level', 'to[1]'].sort(),
      );
      const missing = await t.http.post('/api/forms').set(bearer(admin.adminKey)).send({ name: 'No one' }).expect(400);
      expect(missing.body.error.details.fields[0].field).toBe('recipients');
      await t.http.post('/api/forms').set(bearer(admin.adminKey)).send({ name: 'x', to: 'a@acme.example', colour: 'blue' }).expect(400);
    });

    it('takes usage keys, and refuses public keys and keys without forms permissions', async () => {
      const usage = await createKey(t, admin.adminKey, { keyType: 'usage' });
      await t.http.get('/api/forms').set(bearer(usage.key)).expect(200);
      const readOnly = await createKey(t, admin.adminKey, { keyType: 'usage', permissions: ['email.send'] });
      await t.http.get('/api/forms').set(bearer(readOnly.key)).expect(403);
      await t.http.get('/api/forms').expect(401);
    });
  });

  describe('stored submissions', () => {
    it('pages submissions newest first and exports every field as CSV, formulas neutralised', async () => {
      const created = await t.http
        .post('/api/forms')
        .set(bearer(admin.adminKey))
        .send({ name: 'Export', to: 'owner@acme.example', allowedOrigins: [site], rateLimit: 1000 })
        .expect(201);
      const id = created.body.id;
      await t.http
        .post(`/f/${id}`)
        .set(json)
        .send({ name: 'Ada', email: 'ada@example.org', message: 'Hello, "world"\nline two' })
        .expect(200);
      await t.http
        .post(`/f/${id}`)
        .set(json)
        .send({ name: '=HYPERLINK("http://evil.example","x")', company: 'Acme', phone: '-42' })
        .expect(200);
      await t.http.post(`/f/${id}`).set(json).send({ name: 'Spammer', _service_honeypot: 'filled' }).expect(200);

      const first = await t.http.get(`/api/forms/${id}/submissions?limit=2`).set(bearer(admin.adminKey)).expect(200);
      expect(first.body.total).toBe(3);
      expect(first.body.submissions.map((s: { status: string }) => s.status)).toEqual(['spam', 'accepted']);
      const second = await t.http
        .get(`/api/forms/${id}/submissions?limit=2&cursor=${first.body.nextCursor}`)
        .set(bearer(admin.adminKey))
        .expect(200);
      expect(second.body.submissions.map((s: { fields: { name: string } }) => s.fields.name)).toEqual(['Ada']);
      expect(second.body.nextCursor).toBeNull();
      await t.http.get(`/api/forms/${id}/submissions?cursor=garbage`).set(bearer(admin.adminKey)).expect(400);

      const csv = await t.http.get(`/api/forms/${id}/submissions?format=csv&status=accepted`).set(bearer(admin.adminKey)).expect(200);
      expect(csv.headers['content-type']).toMatch(/^text\/csv/);
      const text = csv.text.replace(/^\ufeff/, '');
      const [header] = text.split('\r\n');
      for (const column of ['id', 'created_at', 'status', 'name', 'email', 'message', 'company', 'phone', 'ip', 'user_agent', 'origin']) {
        expect(header.split(',')).toContain(column);
      }
      expect(text).toContain('"Hello, ""world""\nline two"');
      expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
      expect(text).toContain(',-42,');
      expect(text).not.toContain('Spammer');
    });
  });

  describe('instant forms', () => {
    it('delivers nothing before the emailed link is followed, and everything after', async () => {
      const owner = `owner-${unique()}@example.org`;
      const created = await t.http.post('/instant/forms').set(bearer(admin.adminKey)).send({ name: 'Landing', email: owner }).expect(201);
      expect(created.body).toMatchObject({
        kind: 'instant',
        confirmed: false,
        submitUrl: expect.stringContaining(`/f/${created.body.id}`),
      });
      const confirmation = await sink.waitFor(mailTo(owner));
      const link = /http:\/\/forms\.mailroom\.test(\/instant\/forms\/confirm\/[A-Za-z0-9_-]+)/.exec(confirmation.parsed!.text!)![1];

      const marker = unique();
      await t.http
        .post(`/f/${created.body.id}`)
        .set({ Accept: 'application/json' })
        .set('X-Api-Key', admin.adminKey)
        .send({ message: marker })
        .expect(200);
      const held = await t.http.get(`/instant/forms/${created.body.id}/submissions`).set(bearer(admin.adminKey)).expect(200);
      expect(held.body.submissions.map((s: { status: string }) => s.status)).toEqual(['held']);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sink.messages.filter(mailTo(owner, marker))).toEqual([]);

      // Opening the link shows the button; pressing it (a form post to the same URL) confirms.
      const opened = await t.http.get(link).expect(200);
      expect(opened.text).toContain('<form method="post">');
      const page = await t.http.post(link).set('Accept', 'text/html').expect(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.text).toContain('Form confirmed');
      const delivered = await sink.waitFor(mailTo(owner, marker));
      expect(delivered.parsed!.text).toContain(marker);
      const after = await t.http.get(`/instant/forms/${created.body.id}/submissions`).set(bearer(admin.adminKey)).expect(200);
      expect(after.body.submissions[0]).toMatchObject({ status: 'accepted', messageIds: [expect.stringMatching(/^msg_/)] });

      // Later posts go out at once; a second click says so and sends nothing again.
      const next = unique();
      await t.http
        .post(`/f/${created.body.id}`)
        .set('X-Api-Key', admin.adminKey)
        .set('Accept', 'application/json')
        .send({ message: next })
        .expect(200);
      await sink.waitFor(mailTo(owner, next));
      expect((await t.http.post(link).set('Accept', 'text/html').expect(200)).text).toContain('Already confirmed');
      expect((await t.http.get(link).expect(200)).text).toContain('Already confirmed');
      expect(sink.messages.filter(mailTo(owner, marker))).toHaveLength(1);
      expect((await t.http.get('/instant/forms/confirm/not-a-token').set('Accept', 'text/html').expect(404)).text).toContain('not known');
      expect((await t.http.get('/instant/forms/confirm/not-a-token').expect(404)).body.error.code).toBe('NOT_FOUND');
    });

    it('creates a batch of up to 50 and names a bad entry by its index', async () => {
      const forms = [1, 2, 3].map((i) => ({ name: `Batch ${i}`, email: `batch-${i}-${unique()}@example.org` }));
      const res = await t.http.post('/instant/forms/batch').set(bearer(admin.adminKey)).send({ forms }).expect(201);
      expect(res.body.count).toBe(3);
      for (const form of forms) await sink.waitFor(mailTo(form.email));
      const bad = await t.http
        .post('/instant/forms/batch')
        .set(bearer(admin.adminKey))
        .send({ forms: [forms[0], { name: 'x', email: 'nope' }] })
        .expect(400);
      expect(bad.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['forms[1].email']);
      const many = Array.from({ length: 51 }, (_, i) => ({ name: `n${i}`, email: `n${i}@example.org` }));
      await t.http.post('/instant/forms/batch').set(bearer(admin.adminKey)).send({ forms: many }).expect(400);
      // Another account cannot read an instant form's submissions.
      await t.http.get(`/instant/forms/${res.body.forms[0].id}/submissions`).set(bearer(other.adminKey)).expect(404);
    });
  });
});
