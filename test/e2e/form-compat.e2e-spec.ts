import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { rawRequest } from '../support/raw-request';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * Forms moved from Formspree, Basin and Web3Forms, posted as those services' HTML posts them, through real HTTP
 * to a real SMTP server; and text PostgreSQL cannot store, which must be a 400 rather than a lost submission.
 */
describe('forms moved from Formspree, Basin and Web3Forms', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let admin: { accountId: string; adminKey: string };
  const domain = 'compat-forms.test';
  const site = `https://www.${domain}`;
  const unique = () => randomBytes(5).toString('hex');
  const browser = { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8', Origin: site };
  const json = { Accept: 'application/json', Origin: site };

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, FORMS_FROM: 'Forms <forms@mailroom.test>' } });
    admin = await createAccount(t, 'Compat');
    await createVerifiedDomain(t, admin.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  async function createForm(body: Record<string, unknown> = {}): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(admin.adminKey))
      .send({ name: 'Contact', to: 'owner@compat.example', rateLimit: 1000, allowedOrigins: [site], ...body });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const mailWith = (marker: string) => (mail: ReceivedMail) => (mail.parsed?.text ?? '').includes(marker);

  async function expectNoMail(marker: string): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(sink.messages.filter(mailWith(marker))).toEqual([]);
  }

  async function submissionsOf(formId: string, query = ''): Promise<Record<string, unknown>[]> {
    const page = await t.http.get(`/api/forms/${formId}/submissions${query}`).set(bearer(admin.adminKey)).expect(200);
    return page.body.submissions;
  }

  async function storedCount(formId: string): Promise<number> {
    const [{ count }] = await t.app
      .get(DataSource)
      .query(`SELECT count(*)::int AS count FROM form_submissions WHERE form_id = $1`, [formId]);
    return count;
  }

  describe('honeypots of other services', () => {
    it('takes a filled-in _gotcha (Formspree, Basin) as spam: a success answer, stored as spam, no email', async () => {
      const formId = await createForm();
      const marker = unique();
      const res = await t.http
        .post(`/f/${formId}`)
        .set(json)
        .send({ email: 'bot@example.org', message: marker, _gotcha: 'http://spam.example' })
        .expect(200);
      expect(res.body).toEqual({ success: true, message: expect.any(String), submissionId: expect.stringMatching(/^sub_/) });
      await expectNoMail(marker);
      const [stored] = await submissionsOf(formId, '?status=spam');
      expect(stored).toMatchObject({ id: res.body.submissionId, status: 'spam', spamReason: 'honeypot field _gotcha was filled in' });
    });

    it('still traps _gotcha when the form names a honeypot of its own', async () => {
      const formId = await createForm({ spam_protection: { honeypot: 'website' } });
      const marker = unique();
      const res = await t.http.post(`/f/${formId}`).set(json).send({ message: marker, website: '', _gotcha: 'x' }).expect(200);
      await expectNoMail(marker);
      expect((await submissionsOf(formId, '?status=spam')).map((s) => s.id)).toEqual([res.body.submissionId]);
    });

    it('takes Web3Forms’ botcheck checkbox ticked ("on") as spam, and an empty one as a visitor’s post without mailing it', async () => {
      const formId = await createForm();
      const ticked = unique();
      const spam = await t.http.post(`/f/${formId}`).set(browser).type('form').send(`name=Bot&message=${ticked}&botcheck=on`).expect(303);
      expect(spam.body.success).toBe(true);
      await expectNoMail(ticked);

      const empty = unique();
      await t.http.post(`/f/${formId}`).set(browser).type('form').send(`name=Ann&message=${empty}&botcheck=`).expect(303);
      const mail = await sink.waitFor(mailWith(empty));
      expect(mail.parsed!.text).not.toContain('botcheck');

      const stored = await submissionsOf(formId, '?status=spam');
      expect(stored).toEqual([expect.objectContaining({ status: 'spam', spamReason: 'honeypot field botcheck was filled in' })]);
      const accepted = (await submissionsOf(formId)).find((s) => s.status === 'accepted');
      expect(accepted?.fields).toEqual({ name: 'Ann', message: empty });
    });
  });

  describe('_cc', () => {
    it('copies the notification (Cc) to an address the form allows, never to one the visitor invents or a form that allows none', async () => {
      const formId = await createForm({ ccAllowed: ['sales@compat.example'] });
      const form = await t.http.get(`/api/forms/${formId}`).set(bearer(admin.adminKey)).expect(200);
      expect(form.body.settings.ccAllowed).toEqual(['sales@compat.example']);

      const marker = unique();
      await t.http
        .post(`/f/${formId}`)
        .set(browser)
        .type('form')
        .send(`message=${marker}&_cc=${encodeURIComponent('Sales@compat.example; intruder@evil.example')}`)
        .expect(303);
      const mail = await sink.waitFor(mailWith(marker));
      expect([...mail.envelope.rcptTo].sort()).toEqual(['owner@compat.example', 'sales@compat.example']);
      expect(mail.parsed!.to).toMatchObject({ value: [{ address: 'owner@compat.example' }] });
      expect(mail.parsed!.cc).toMatchObject({ value: [{ address: 'sales@compat.example' }] });
      expect(mail.raw.toString()).not.toContain('intruder@evil.example');

      // A form that allows no _cc copies nobody, and answers the visitor the same.
      const closedForm = await createForm();
      const closed = unique();
      const res = await t.http.post(`/f/${closedForm}`).set(json).send({ message: closed, _cc: 'owner-friend@evil.example' }).expect(200);
      expect(res.body.success).toBe(true);
      const closedMail = await sink.waitFor(mailWith(closed));
      expect(closedMail.envelope.rcptTo).toEqual(['owner@compat.example']);
      expect(closedMail.parsed!.cc).toBeUndefined();
      expect(closedMail.parsed!.text).not.toContain('evil.example');
    });

    it('refuses a ccAllowed that is not a list of addresses', async () => {
      const res = await t.http
        .post('/api/forms')
        .set(bearer(admin.adminKey))
        .send({ name: 'Contact', to: 'owner@compat.example', ccAllowed: ['not-an-address'] })
        .expect(400);
      expect(res.body.error.details.fields).toEqual([{ field: 'ccAllowed[0]', message: 'not an email address: not-an-address' }]);
    });
  });

  it('takes a Formspree form unchanged: _replyto, _subject, _next, _format=plain, _gotcha left empty', async () => {
    const formId = await createForm();
    const marker = unique();
    const res = await t.http
      .post(`/f/${formId}`)
      .set(browser)
      .type('form')
      .send(
        new URLSearchParams({
          email: 'ada@example.org',
          message: marker,
          _replyto: 'replies@example.org',
          _subject: 'From the website',
          _next: `${site}/thanks`,
          _format: 'plain',
          _gotcha: '',
        }).toString(),
      )
      .expect(303);
    expect(res.headers.location).toBe(`${site}/thanks`);
    const mail = await sink.waitFor(mailWith(marker));
    expect(mail.parsed!.subject).toBe('From the website');
    expect(mail.parsed!.replyTo).toMatchObject({ value: [{ address: 'replies@example.org' }] });
    expect(mail.parsed!.html).toBe(false);
    expect(mail.parsed!.text).not.toMatch(/_gotcha|_next|_format/);
  });

  describe('text PostgreSQL cannot store', () => {
    const nulRefusal = (field: string, message = 'must not contain NUL (U+0000)') => ({
      error: { code: 'VALIDATION_FAILED', message: expect.any(String), details: { fields: [{ field, message }] } },
    });

    it('answers a NUL in a url-encoded value or name 400 naming the field, and stores nothing', async () => {
      const formId = await createForm();
      const value = await t.http.post(`/f/${formId}`).set(json).type('form').send('name=Ann&message=hello%00world');
      expect(value.status).toBe(400);
      expect(value.body).toMatchObject(nulRefusal('message'));

      const name = await t.http.post(`/f/${formId}`).set(json).type('form').send('mess%00age=hello');
      expect(name.status).toBe(400);
      expect(name.body).toMatchObject(nulRefusal('mess\\u0000age', 'name must not contain NUL (U+0000)'));

      const subject = await t.http.post(`/f/${formId}`).set(json).type('form').send('message=hi&_subject=a%00b');
      expect(subject.status).toBe(400);
      expect(subject.body).toMatchObject(nulRefusal('_subject'));
      expect(await storedCount(formId)).toBe(0);
    });

    it('answers a NUL or a lone surrogate in JSON 400, and keeps an emoji', async () => {
      const formId = await createForm();
      const post = (body: string) =>
        rawRequest(t.app.getHttpServer(), {
          method: 'POST',
          path: `/f/${formId}`,
          headers: { ...json, 'Content-Type': 'application/json' },
          body,
        });
      const nul = await post('{"msg":"hello\\u0000world"}');
      expect(nul.status).toBe(400);
      expect(nul.body).toMatchObject(nulRefusal('msg'));

      const lone = await post('{"msg":"lone \\ud800"}');
      expect(lone.status).toBe(400);
      expect(lone.body).toMatchObject(nulRefusal('msg', 'must not contain an unpaired UTF-16 surrogate'));

      const loneName = await post('{"\\udc00":"x"}');
      expect(loneName.status).toBe(400);
      expect(loneName.body.error.details.fields[0].message).toBe('name must not contain an unpaired UTF-16 surrogate');
      expect(await storedCount(formId)).toBe(0);

      const marker = unique();
      await post(`{"msg":"${marker} \\ud83d\\ude00"}`).then((res) => expect(res.status).toBe(200));
      expect((await submissionsOf(formId))[0].fields).toEqual({ msg: `${marker} 😀` });
    });

    it('answers a NUL in a multipart value 400 naming the field, in a part’s header (a name) 400, and stores nothing', async () => {
      const formId = await createForm();
      const value = await t.http.post(`/f/${formId}`).set(json).field('name', 'Ann').field('message', 'hello\u0000world');
      expect(value.status).toBe(400);
      expect(value.body).toMatchObject(nulRefusal('message'));

      // The multipart parser refuses a part header holding NUL (a field or file name) before any field is read.
      const name = await t.http.post(`/f/${formId}`).set(json).field('mess\u0000age', 'hello');
      expect(name.status).toBe(400);
      expect(name.body.error.code).toBe('VALIDATION_FAILED');
      const fileName = await t.http.post(`/f/${formId}`).set(json).field('message', 'hi').attach('cv', Buffer.from('text'), 'c\u0000v.txt');
      expect(fileName.status).toBe(400);
      expect(fileName.body.error.code).toBe('VALIDATION_FAILED');
      expect(await storedCount(formId)).toBe(0);
    });
  });
});
