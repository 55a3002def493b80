import { randomBytes } from 'node:crypto';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * The emails a form submission makes, read from a real SMTP server as an inbox reads them: the acknowledgment
 * relays nothing a visitor wrote, every email stays within its size cap, `_format` and `_language` are followed,
 * bidi controls are shown, and a tenant's slow template does not hold the post.
 */
describe('form emails', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let admin: { accountId: string; adminKey: string };
  const domain = 'site-a.test';
  const site = `https://www.${domain}`;
  const unique = () => randomBytes(5).toString('hex');
  const json = { Accept: 'application/json' };

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, FORMS_FROM: 'Forms <forms@mailroom.test>' } });
    admin = await createAccount(t, 'Site A');
    await createVerifiedDomain(t, admin.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  async function createForm(body: Record<string, unknown>): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(admin.adminKey))
      .send({ name: 'Contact', to: 'owner@site-a.example', rateLimit: 1000, allowedOrigins: [site], ...body });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const post = (formId: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    t.http
      .post(`/f/${formId}`)
      .set({ ...json, Origin: site, ...headers })
      .send(body);

  const to = (address: string) => (mail: ReceivedMail) => mail.envelope.rcptTo.includes(address);
  const textOf = (mail: ReceivedMail) => mail.parsed?.text ?? '';
  const htmlOf = (mail: ReceivedMail) => String(mail.parsed?.html || '');

  describe('the acknowledgment', () => {
    it('quotes nothing the visitor wrote and has no Reply-To unless the form sets one', async () => {
      const formId = await createForm({ acknowledgment: { enabled: true } });
      const victim = `victim-${unique()}@example.org`;
      const res = await post(formId, {
        name: 'Your bank',
        email: victim,
        message: 'Your account is locked. Verify at https://evil.test/login',
      }).expect(200);

      const ack = await sink.waitFor(to(victim));
      expect(ack.parsed!.from!.value[0].address).toBe(`forms@${domain}`);
      expect(ack.parsed!.subject).toBe('We received your message');
      expect(ack.parsed!.replyTo).toBeUndefined();
      expect(ack.parsed!.headers.has('reply-to')).toBe(false);
      for (const part of [textOf(ack), htmlOf(ack)]) {
        expect(part).toContain('Thank you for your message');
        expect(part).toContain(res.body.submissionId);
        expect(part).not.toMatch(/evil|locked|Your bank|owner@site-a/);
      }

      // The owner still gets everything.
      const notification = await sink.waitFor((mail) => to('owner@site-a.example')(mail) && textOf(mail).includes(res.body.submissionId));
      expect(textOf(notification)).toContain('Verify at https://evil.test/login');
    });

    it('takes the form’s acknowledgment.replyTo, and gives a template the fields it names, links defanged', async () => {
      await t.http
        .post('/email/templates')
        .set(bearer(admin.adminKey))
        .send({
          name: 'echo-ack',
          type: 'acknowledgment',
          subject: 'Thanks {{ form.name }}',
          text: 'You wrote: {{ form.message }}',
          html: '<p>You wrote: {{ form.message }}</p>',
        })
        .expect(201);
      const formId = await createForm({ acknowledgment: { enabled: true, template: 'echo-ack', replyTo: 'hello@site-a.example' } });
      const shown = await t.http.get(`/api/forms/${formId}`).set(bearer(admin.adminKey)).expect(200);
      expect(JSON.stringify(shown.body)).toContain('hello@site-a.example');
      const victim = `victim-${unique()}@example.org`;
      await post(formId, { name: 'Bank', email: victim, message: 'Verify at https://evil.test/login or www.evil.test' }).expect(200);

      const ack = await sink.waitFor(to(victim));
      expect(ack.parsed!.replyTo!.value.map((m) => m.address)).toEqual(['hello@site-a.example']);
      expect(ack.parsed!.subject).toBe('Thanks Bank');
      expect(textOf(ack).trim()).toBe('You wrote: Verify at hxxps[:]//evil[.]test/login or www[.]evil[.]test');
      expect(htmlOf(ack)).toContain('<p>You wrote: Verify at hxxps[:]//evil[.]test/login or www[.]evil[.]test</p>');
      expect(htmlOf(ack)).not.toContain('<a');
    });

    it('refuses an acknowledgment.replyTo that is not an address', async () => {
      const res = await t.http
        .post('/api/forms')
        .set(bearer(admin.adminKey))
        .send({ name: 'Bad', to: 'owner@site-a.example', acknowledgment: { enabled: true, replyTo: 'not an address' } })
        .expect(400);
      expect(res.body.error.details.fields).toContainEqual({
        field: expect.stringMatching(/acknowledgment\.replyTo$/),
        message: 'must be an email address',
      });
    });
  });

  describe('language and format', () => {
    it('writes the acknowledgment in the visitor’s language, the notification in _language only', async () => {
      const formId = await createForm({ acknowledgment: { enabled: true } });
      const french = `fr-${unique()}@example.org`;
      const first = await post(formId, { email: french, message: 'bonjour' }, { 'Accept-Language': 'fr-CA,fr;q=0.9,en;q=0.5' }).expect(200);
      const ackFr = await sink.waitFor(to(french));
      expect(ackFr.parsed!.subject).toBe('Nous avons bien reçu votre message');
      expect(textOf(ackFr)).toContain('Merci pour votre message');
      const ownerEn = await sink.waitFor((mail) => to('owner@site-a.example')(mail) && textOf(mail).includes(first.body.submissionId));
      expect(ownerEn.parsed!.subject).toBe('New submission: Contact');

      const german = `de-${unique()}@example.org`;
      const second = await post(formId, { email: german, message: 'hallo', _language: 'de' }, { 'Accept-Language': 'fr' }).expect(200);
      const ackDe = await sink.waitFor(to(german));
      expect(ackDe.parsed!.subject).toBe('Wir haben Ihre Nachricht erhalten');
      const ownerDe = await sink.waitFor((mail) => to('owner@site-a.example')(mail) && textOf(mail).includes(second.body.submissionId));
      expect(ownerDe.parsed!.subject).toBe('Neue Einsendung: Contact');
      expect(textOf(ownerDe)).toContain('Ein Formular auf www.site-a.test wurde abgeschickt.');
    });

    it('sends a text-only notification for _format=plain', async () => {
      const formId = await createForm({});
      const marker = unique();
      await post(formId, { message: `plain ${marker}`, _format: 'plain' }).expect(200);
      const mail = await sink.waitFor((m) => textOf(m).includes(marker));
      expect(mail.parsed!.html).toBe(false);
      expect(mail.raw.toString()).not.toMatch(/text\/html/i);
      expect(textOf(mail)).toContain(`message: plain ${marker}`);
      expect(textOf(mail)).not.toContain('_format');
    });

    it('shows right-to-left override characters escaped in the notification', async () => {
      const formId = await createForm({});
      const marker = unique();
      await post(formId, { message: marker, ['file\u202Ename']: 'invoice\u202Efdp.exe' }).expect(200);
      const mail = await sink.waitFor((m) => textOf(m).includes(marker));
      expect(textOf(mail)).toContain('file<U+202E>name: invoice<U+202E>fdp.exe');
      expect(htmlOf(mail)).toContain('invoice&lt;U+202E&gt;fdp.exe');
      expect(mail.raw.toString('utf8') + textOf(mail) + htmlOf(mail)).not.toContain('\u202E');
    });
  });

  describe('size', () => {
    it('caps the notification and the acknowledgment at 5 MB, cutting values with a pointer to the stored submission', async () => {
      await t.http
        .post('/email/templates')
        .set(bearer(admin.adminKey))
        .send({ name: 'all-fields-ack', type: 'acknowledgment', subject: 'Copy', html: '{% for f in form %}<p>{{ f[1] }}</p>{% endfor %}' })
        .expect(201);
      const formId = await createForm({ acknowledgment: { enabled: true, template: 'all-fields-ack' } });
      const submitter = `big-${unique()}@example.org`;
      // 6 MB of `"` in a multipart post (12 MB allowed): 36 MB of html once escaped, were it not cut.
      const request = t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .field('email', submitter);
      for (let i = 0; i < 60; i++) void request.field(`f${i}`, '"'.repeat(100_000));
      const res = await request.expect(200);

      const mb = (mail: ReceivedMail) => (Buffer.byteLength(textOf(mail)) + Buffer.byteLength(htmlOf(mail))) / 1024 / 1024;
      const notification = await sink.waitFor(
        (mail) => to('owner@site-a.example')(mail) && textOf(mail).includes(res.body.submissionId),
        30_000,
      );
      expect(mb(notification)).toBeLessThanOrEqual(5);
      expect(mb(notification)).toBeGreaterThan(3);
      expect(textOf(notification)).toContain(
        `more characters; the whole value is in submission ${res.body.submissionId}: GET /api/forms/${formId}/submissions)`,
      );
      const ack = await sink.waitFor(to(submitter), 30_000);
      expect(mb(ack)).toBeLessThanOrEqual(5);
      expect(ack.raw.length).toBeLessThan(8 * 1024 * 1024);

      // The whole value is stored.
      const page = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(admin.adminKey)).expect(200);
      expect(page.body.submissions[0].fields.f0).toHaveLength(100_000);
    }, 60_000);
  });

  describe('notifications made later', () => {
    // What every notification of such a post says, however late it is made.
    const controls = { _subject: 'Anfrage von der Website', _replyto: 'reply@example.org', _format: 'plain', _language: 'de' };
    const expectAsPosted = (mail: ReceivedMail) => {
      expect(mail.parsed!.subject).toBe('Anfrage von der Website');
      expect(mail.parsed!.replyTo!.value.map((m) => m.address)).toEqual(['reply@example.org']);
      expect(mail.parsed!.html).toBe(false);
      expect(textOf(mail)).toMatch(/Ein Formular (auf www\.site-a\.test )?wurde abgeschickt\./);
    };

    it('follows the post’s control fields when an instant form is confirmed', async () => {
      const owner = `instant-${unique()}@example.org`;
      const created = await t.http.post('/instant/forms').set(bearer(admin.adminKey)).send({ name: 'Landing', email: owner }).expect(201);
      const confirmation = await sink.waitFor(to(owner));
      const link = /\/instant\/forms\/confirm\/[A-Za-z0-9_-]+/.exec(textOf(confirmation))![0];
      const marker = unique();
      await t.http
        .post(`/f/${created.body.id}`)
        .set({ ...json, 'X-Api-Key': admin.adminKey })
        .send({ message: marker, ...controls })
        .expect(200);

      await t.http.post(link).expect(200);
      const mail = await sink.waitFor((m) => to(owner)(m) && textOf(m).includes(marker));
      expectAsPosted(mail);
    });

    it('follows them, _cc included, when a suppressed owner’s notification is sent after the lift', async () => {
      const owner = `lifted-${unique()}@site-a.example`;
      const formId = await createForm({ to: owner, ccAllowed: ['sales@site-a.example'] });
      await t.http.post('/email/suppression').set(bearer(admin.adminKey)).send({ email: owner, reason: 'bounced' }).expect(201);
      const marker = unique();
      await post(formId, { message: marker, ...controls, _cc: 'sales@site-a.example' }).expect(200);
      // The copy goes out at once; the owner's waits for the lift and then says what the post asked.
      const copy = await sink.waitFor((m) => to('sales@site-a.example')(m) && textOf(m).includes(marker));
      expectAsPosted(copy);

      await t.http
        .delete(`/email/suppression/${encodeURIComponent(owner)}`)
        .set(bearer(admin.adminKey))
        .expect(200);
      const mail = await sink.waitFor((m) => to(owner)(m) && textOf(m).includes(marker));
      expectAsPosted(mail);
      expect(mail.envelope.rcptTo).toEqual([owner]);
    });
  });

  describe('a slow template', () => {
    it('gets 50 ms on the request’s thread, then the default body is sent', async () => {
      await t.http
        .post('/email/templates')
        .set(bearer(admin.adminKey))
        .send({
          name: 'nested-loops',
          type: 'form',
          subject: 'Looped',
          // About 0.2 s of LiquidJS: within its own 500 ms budget, far beyond the 50 ms of a form email.
          text: '{% for i in (1..700) %}{% for j in (1..700) %}{% endfor %}{% endfor %}Looped {{ form.message }}',
        })
        .expect(201);
      const formId = await createForm({ template: 'nested-loops' });
      const marker = unique();
      await post(formId, { message: marker }).expect(200);
      const mail = await sink.waitFor((m) => textOf(m).includes(marker));
      expect(mail.parsed!.subject).toBe('Looped');
      expect(textOf(mail)).toContain('New submission: Contact');
      expect(textOf(mail)).toContain(`message: ${marker}`);
      expect(textOf(mail)).not.toContain(`Looped ${marker}`);
    });
  });
});
