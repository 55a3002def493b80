import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

/** The spam folder and its release, the sender allowlist, the posted order of fields, and repeated posts stored once. */
describe('form spam folder, field order and repeated posts', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let admin: { accountId: string; adminKey: string };
  const domain = 'spam-folder.test';
  const site = `https://www.${domain}`;
  const json = { Accept: 'application/json', Origin: site };
  const unique = () => randomBytes(5).toString('hex');
  const mailWith = (marker: string) => (mail: ReceivedMail) => (mail.parsed?.text ?? '').includes(marker);

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, FORMS_FROM: 'Forms <forms@mailroom.test>' } });
    admin = await createAccount(t, 'Spam folder');
    await createVerifiedDomain(t, admin.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  async function createForm(settings: Record<string, unknown> = {}): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(admin.adminKey))
      .send({ name: 'Contact', to: 'owner@spam-folder.example', rateLimit: 1000, allowedOrigins: [site], ...settings });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const post = (formId: string, body: Record<string, unknown>) => t.http.post(`/f/${formId}`).set(json).send(body).expect(200);
  const list = async (formId: string, query = '') =>
    (await t.http.get(`/api/forms/${formId}/submissions${query}`).set(bearer(admin.adminKey)).expect(200)).body;

  async function expectNoMail(marker: string): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(sink.messages.filter(mailWith(marker))).toEqual([]);
  }

  const filtered = { level: 'medium', content_filter: true };
  const pharmacy = (marker: string) => ({
    name: 'Pharmacy',
    email: `pharmacy-${marker}@example.net`,
    message: `Viagra in stock, cheap! ${marker}`,
  });

  describe('spam folder', () => {
    it('lists spam with ?spam=true (with its reason) and leaves it out with ?spam=false', async () => {
      const formId = await createForm({ spam_protection: filtered });
      const marker = unique();
      const spam = await post(formId, pharmacy(marker));
      const real = await post(formId, { name: 'Ada', email: 'ada@example.org', message: `A real question ${marker}` });

      const folder = await list(formId, '?spam=true');
      expect(folder.total).toBe(1);
      expect(folder.submissions).toEqual([
        expect.objectContaining({ id: spam.body.submissionId, status: 'spam', spamReason: 'spam phrase "viagra"' }),
      ]);
      const inbox = await list(formId, '?spam=false');
      expect(inbox.submissions.map((s: { id: string }) => s.id)).toEqual([real.body.submissionId]);

      const csv = await t.http.get(`/api/forms/${formId}/submissions?format=csv&spam=true`).set(bearer(admin.adminKey)).expect(200);
      expect(csv.text).toContain(spam.body.submissionId);
      expect(csv.text).not.toContain(real.body.submissionId);
      await t.http.get(`/api/forms/${formId}/submissions?spam=maybe`).set(bearer(admin.adminKey)).expect(400);
    });

    it('filters an instant form’s listing with ?spam= too', async () => {
      const created = await t.http
        .post('/instant/forms')
        .set(bearer(admin.adminKey))
        .send({ name: 'Landing', email: `instant-${unique()}@spam-folder.example` })
        .expect(201);
      const keyed = (body: Record<string, unknown>) =>
        t.http.post(`/f/${created.body.id}`).set('X-Api-Key', admin.adminKey).set('Accept', 'application/json').send(body).expect(200);
      const spam = await keyed({ message: unique(), _service_honeypot: 'x' });
      const held = await keyed({ message: unique() });
      const listing = async (query: string) =>
        (await t.http.get(`/instant/forms/${created.body.id}/submissions${query}`).set(bearer(admin.adminKey)).expect(200)).body
          .submissions as { id: string }[];
      expect((await listing('?spam=true')).map((s) => s.id)).toEqual([spam.body.submissionId]);
      expect((await listing('?spam=false')).map((s) => s.id)).toEqual([held.body.submissionId]);
    });

    it('"not spam" accepts the submission, mails the owner, sends the webhook event, and a second call changes nothing', async () => {
      const formId = await createForm({ spam_protection: filtered });
      const marker = unique();
      const { submissionId } = (await post(formId, pharmacy(marker))).body;
      await expectNoMail(marker);

      const released = await t.http
        .post(`/api/forms/${formId}/submissions/${submissionId}/not-spam`)
        .set(bearer(admin.adminKey))
        .expect(200);
      expect(released.body).toMatchObject({ id: submissionId, status: 'accepted', spamReason: null });
      expect(released.body.messageIds).toHaveLength(1);

      const mail = await sink.waitFor(mailWith(marker));
      expect(mail.envelope.rcptTo).toEqual(['owner@spam-folder.example']);
      expect(mail.parsed!.text).toContain(`Viagra in stock, cheap! ${marker}`);
      // No acknowledgment: nothing went to the visitor's address.
      expect(sink.messages.filter((m) => m.envelope.rcptTo.includes(`pharmacy-${marker}@example.net`))).toEqual([]);

      const events = await t.app
        .get(DataSource)
        .query(`SELECT type FROM event_outbox WHERE payload->>'submissionId' = $1 AND type = 'form.submission'`, [submissionId]);
      expect(events).toHaveLength(1);
      expect((await list(formId, '?spam=true')).total).toBe(0);
      expect((await list(formId, '?status=accepted')).submissions[0]).toMatchObject({ id: submissionId, status: 'accepted' });

      const again = await t.http.post(`/api/forms/${formId}/submissions/${submissionId}/not-spam`).set(bearer(admin.adminKey)).expect(200);
      expect(again.body).toMatchObject({ id: submissionId, status: 'accepted', messageIds: released.body.messageIds });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sink.messages.filter(mailWith(marker))).toHaveLength(1);
    });

    it('"not spam" sends the notification the post asked for: its _subject, _replyto, _format, _language and _cc', async () => {
      const formId = await createForm({ spam_protection: filtered, ccAllowed: ['sales@spam-folder.example'] });
      const marker = unique();
      const { submissionId } = (
        await post(formId, {
          ...pharmacy(marker),
          _subject: 'Anfrage zu Medikamenten',
          _replyto: 'reply@example.org',
          _format: 'plain',
          _language: 'de',
          _cc: 'sales@spam-folder.example',
        })
      ).body;
      await expectNoMail(marker);

      await t.http.post(`/api/forms/${formId}/submissions/${submissionId}/not-spam`).set(bearer(admin.adminKey)).expect(200);
      const mail = await sink.waitFor(mailWith(marker));
      expect(mail.envelope.rcptTo.sort()).toEqual(['owner@spam-folder.example', 'sales@spam-folder.example']);
      expect(mail.parsed!.subject).toBe('Anfrage zu Medikamenten');
      expect(mail.parsed!.replyTo!.value.map((m) => m.address)).toEqual(['reply@example.org']);
      expect(mail.parsed!.html).toBe(false);
      expect(mail.parsed!.text).toContain('Ein Formular auf www.spam-folder.test wurde abgeschickt.');
    });

    it('answers 404 for a submission of another form and needs a key that may write forms', async () => {
      const formId = await createForm({ spam_protection: filtered });
      const otherForm = await createForm({ spam_protection: filtered });
      const { submissionId } = (await post(formId, pharmacy(unique()))).body;
      await t.http.post(`/api/forms/${otherForm}/submissions/${submissionId}/not-spam`).set(bearer(admin.adminKey)).expect(404);
      await t.http.post(`/api/forms/${formId}/submissions/${submissionId}/not-spam`).expect(401);
      expect((await list(formId, '?spam=true')).total).toBe(1);
    });
  });

  describe('sender allowlist', () => {
    it('spares an allowlisted sender (address or domain) the content filter, not the honeypot', async () => {
      const formId = await createForm({
        spam_protection: { ...filtered, allowlist: ['Pharmacist@Example.net', '@partner.example'] },
      });
      const read = await t.http.get(`/api/forms/${formId}`).set(bearer(admin.adminKey)).expect(200);
      expect(read.body.settings.spam_protection.allowlist).toEqual(['pharmacist@example.net', '@partner.example']);

      const marker = unique();
      const known = await post(formId, { email: 'pharmacist@example.net', message: `Viagra in stock ${marker}` });
      const partner = await post(formId, { email: 'bob@partner.example', message: `Viagra again ${marker}` });
      const trapped = await post(formId, { email: 'bob@partner.example', message: `trap ${marker}`, _service_honeypot: 'x' });
      const stranger = await post(formId, { email: 'eve@example.net', message: `Viagra in stock ${marker}` });

      const statuses = Object.fromEntries((await list(formId)).submissions.map((s: { id: string; status: string }) => [s.id, s.status]));
      expect(statuses).toEqual({
        [known.body.submissionId]: 'accepted',
        [partner.body.submissionId]: 'accepted',
        [trapped.body.submissionId]: 'spam',
        [stranger.body.submissionId]: 'spam',
      });
      const mail = await sink.waitFor(mailWith(`Viagra in stock ${marker}`));
      expect(mail.parsed!.text).toContain('pharmacist@example.net');
    });

    it('refuses an allowlist entry that is neither an address nor an @domain', async () => {
      const res = await t.http
        .post('/api/forms')
        .set(bearer(admin.adminKey))
        .send({ name: 'Bad', to: 'owner@spam-folder.example', spam_protection: { allowlist: ['partner.example'] } })
        .expect(400);
      expect(res.body.error.details.fields).toEqual([expect.objectContaining({ field: 'spam_protection.allowlist[0]' })]);
    });
  });

  describe('field order', () => {
    it('lists fields in the order posted, in JSON and in the CSV header', async () => {
      const formId = await createForm();
      const marker = unique();
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, 'Content-Type': 'application/x-www-form-urlencoded' })
        .send(`zeta=last-letter&alpha=first-letter&mid=${marker}`)
        .expect(200);
      const [submission] = (await list(formId)).submissions;
      expect(Object.keys(submission.fields)).toEqual(['zeta', 'alpha', 'mid']);

      const csv = await t.http.get(`/api/forms/${formId}/submissions?format=csv`).set(bearer(admin.adminKey)).expect(200);
      const [header] = csv.text.replace(/^\ufeff/, '').split('\r\n');
      expect(header).toBe('id,created_at,status,zeta,alpha,mid,files,ip,user_agent,origin,other_fields');
    });
  });

  describe('repeated posts', () => {
    it('stores two identical posts once: the same submissionId, one notification', async () => {
      const formId = await createForm();
      const marker = unique();
      const body = { name: 'Ada', email: 'ada@example.org', message: `double click ${marker}` };
      const first = await post(formId, body);
      const second = await post(formId, body);
      expect(second.body).toEqual(first.body);

      const page = await list(formId);
      expect(page.total).toBe(1);
      await sink.waitFor(mailWith(marker));
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(sink.messages.filter(mailWith(marker))).toHaveLength(1);

      // A different post is a new submission.
      const third = await post(formId, { ...body, message: `double click ${marker}, corrected` });
      expect(third.body.submissionId).not.toBe(first.body.submissionId);
      expect((await list(formId)).total).toBe(2);
    });

    it('stores a repeated browser post once and sends it to the same thank-you page', async () => {
      const formId = await createForm({ redirect: `${site}/thanks` });
      const body = `name=Ada&message=${unique()}`;
      const navigate = { Origin: site, Accept: 'text/html', 'Content-Type': 'application/x-www-form-urlencoded' };
      const first = await t.http.post(`/f/${formId}`).set(navigate).send(body).expect(303);
      const second = await t.http.post(`/f/${formId}`).set(navigate).send(body).expect(303);
      expect(second.headers.location).toBe(first.headers.location);
      expect((await list(formId)).total).toBe(1);
    });
  });

  describe('CSV export filters', () => {
    it('exports only undelivered notifications with ?notification=undelivered', async () => {
      const owner = `owner-${unique()}@spam-folder.example`;
      const formId = await createForm({ to: owner });
      const marker = unique();
      const delivered = await post(formId, { message: `delivered ${marker}` });
      await sink.waitFor(mailWith(marker)); // sent before the suppression: not held while it waited
      await t.http.post('/email/suppression').set(bearer(admin.adminKey)).send({ email: owner, reason: 'bounced' }).expect(201);
      const held = await post(formId, { message: `held ${unique()}` });

      const csv = await t.http
        .get(`/api/forms/${formId}/submissions?format=csv&notification=undelivered`)
        .set(bearer(admin.adminKey))
        .expect(200);
      expect(csv.text).toContain(held.body.submissionId);
      expect(csv.text).not.toContain(delivered.body.submissionId);
      await t.http.delete(`/email/suppression/${encodeURIComponent(owner)}`).set(bearer(admin.adminKey));
    });
  });

  describe('CSV cells', () => {
    it('quotes values holding ";" and shows bidi overrides escaped', async () => {
      const formId = await createForm();
      await post(formId, { name: 'x;=1+1;y', file: 'invoice\u202Egpj.exe', note: 'a,b' });
      const csv = await t.http.get(`/api/forms/${formId}/submissions?format=csv`).set(bearer(admin.adminKey)).expect(200);
      const [, row] = csv.text.replace(/^\ufeff/, '').split('\r\n');
      expect(row).toContain(',"x;=1+1;y",invoice<U+202E>gpj.exe,"a,b",');
      expect(csv.text).not.toContain('\u202E');
    });
  });
});
