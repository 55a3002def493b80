import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { solveChallenge } from 'altcha-lib/v1';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

/** Every submission endpoint, through real HTTP with real Origin headers, delivering to a real SMTP server. */
describe('form submissions', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let captcha: Server;
  let captchaUrl: string;
  const captchaCalls: URLSearchParams[] = [];
  let admin: { accountId: string; adminKey: string };
  let other: { accountId: string; adminKey: string };
  const domain = 'acme-forms.test';
  const site = `https://www.${domain}`;
  const unique = () => randomBytes(5).toString('hex');
  const browser = { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
  const json = { Accept: 'application/json' };

  beforeAll(async () => {
    sink = await startSmtpSink();
    captcha = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const params = new URLSearchParams(body);
        captchaCalls.push(params);
        const ok = params.get('secret') === 'site-secret' && params.get('response') === 'good-token';
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(ok ? { success: true } : { success: false, 'error-codes': ['invalid-input-response'] }));
      });
    });
    await new Promise<void>((resolve) => captcha.listen(0, '127.0.0.1', resolve));
    captchaUrl = `http://127.0.0.1:${(captcha.address() as AddressInfo).port}/siteverify`;
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        TURNSTILE_VERIFY_URL: captchaUrl,
        FORMS_FROM: 'Acme Forms <forms@mailroom.test>',
        RATE_LIMIT_ENABLED: 'true',
      },
    });
    admin = await createAccount(t, 'Acme');
    other = await createAccount(t, 'Other');
    await createVerifiedDomain(t, admin.accountId, domain);
    await t.http
      .put(`/domains/${domain}`)
      .set(bearer(admin.adminKey))
      .send({
        contactRecipients: ['contact@acme.example'],
        forms: {
          quote: { to: 'sales@acme.example', subject: 'New quote request', redirect: `${site}/thanks`, rateLimit: 1000 },
          feedback: { rateLimit: 1000 },
        },
      })
      .expect(200);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await new Promise((resolve) => captcha.close(resolve));
  });

  async function createForm(body: Record<string, unknown>, key = admin.adminKey): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(key))
      .send({ name: 'Contact', to: 'owner@acme.example', rateLimit: 1000, allowedOrigins: [site], ...body });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const mailWith = (marker: string) => (mail: ReceivedMail) => (mail.parsed?.text ?? '').includes(marker);

  async function expectNoMail(marker: string): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(sink.messages.filter(mailWith(marker))).toEqual([]);
  }

  describe('delivery', () => {
    it('delivers the notification of /f/{formId} with every field, escaped, Reply-To the submitter', async () => {
      const formId = await createForm({ subject: 'Website contact', replies: true });
      const marker = unique();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({
          name: 'Ada <b>Lovelace</b>',
          email: 'ada@example.org',
          message: `hi <script>alert(1)</script> ${marker}`,
          _subject: 'Custom subject',
        })
        .expect(200);
      expect(res.body).toEqual({ success: true, message: expect.any(String), submissionId: expect.stringMatching(/^sub_/) });
      expect(res.headers['access-control-allow-origin']).toBe(site);

      const mail = await sink.waitFor(mailWith(marker));
      expect(mail.envelope.rcptTo).toEqual(['owner@acme.example']);
      expect(mail.parsed!.subject).toBe('Custom subject');
      // A form without a domain of an account with a verified domain sends from that domain, not FORMS_FROM.
      expect(mail.parsed!.from!.value[0].address).toBe(`forms@${domain}`);
      expect(mail.parsed!.replyTo!.value[0].address).toBe('ada@example.org');
      expect(mail.parsed!.text).toContain('Ada <b>Lovelace</b>');
      const html = String(mail.parsed!.html);
      expect(html).not.toContain('<script>');
      expect(html).not.toContain('<b>Lovelace');
      expect(html).toContain('&lt;script&gt;');
      expect(mail.parsed!.text).not.toContain('_subject');

      // Stored, and visible in the email pipeline.
      const page = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(admin.adminKey)).expect(200);
      expect(page.body.submissions[0]).toMatchObject({
        id: res.body.submissionId,
        status: 'accepted',
        fields: { name: 'Ada <b>Lovelace</b>', email: 'ada@example.org' },
        origin: site,
      });
      const [messageId] = page.body.submissions[0].messageIds;
      const status = await t.http.get(`/email/status/${messageId}`).set(bearer(admin.adminKey)).expect(200);
      expect(status.body.events.map((e: { type: string }) => e.type)).toContain('queued');
      const [outbox] = await t.app
        .get(DataSource)
        .query(`SELECT type, payload FROM event_outbox WHERE payload->>'submissionId' = $1`, [res.body.submissionId]);
      expect(outbox).toMatchObject({ type: 'form.submission', payload: { formId, fields: { email: 'ada@example.org' } } });
    });

    it('keeps fields named constructor and toString as posted (and __proto__ a control field) in the submission, email and CSV', async () => {
      const formId = await createForm({ subject: 'Prototype names' });
      const marker = unique();
      // Raw JSON: an object literal's `__proto__: 'z'` would set a prototype instead of sending a field.
      const posted = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site, 'Content-Type': 'application/json' })
        .send(`{"constructor":"x","toString":"y","__proto__":"z","name":"Ann","message":"${marker}"}`)
        .expect(200);
      const multipartMarker = unique();
      const multipart = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .field('constructor', 'x2')
        .field('toString', 'y2')
        .field('__proto__', 'z2')
        .field('message', multipartMarker);
      expect(multipart.status).toBe(200);

      const page = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(admin.adminKey)).expect(200);
      const stored = (id: string) => page.body.submissions.find((s: { id: string }) => s.id === id).fields;
      // `__proto__` starts with `_`: a control field (D-25), never stored or mailed, like `_gotcha`.
      expect(stored(posted.body.submissionId)).toEqual({ constructor: 'x', toString: 'y', name: 'Ann', message: marker });
      expect(stored(multipart.body.submissionId)).toEqual({ constructor: 'x2', toString: 'y2', message: multipartMarker });

      for (const [mark, values] of [
        [marker, ['constructor: x', 'toString: y', 'name: Ann']],
        [multipartMarker, ['constructor: x2', 'toString: y2']],
      ] as const) {
        const mail = await sink.waitFor(mailWith(mark));
        for (const line of values) expect(mail.parsed!.text).toContain(line);
        expect(mail.parsed!.text).not.toContain('function');
        expect(mail.parsed!.text).not.toContain('__proto__');
        expect(String(mail.parsed!.html)).not.toContain('function Object');
      }

      const csv = await t.http.get(`/api/forms/${formId}/submissions?format=csv`).set(bearer(admin.adminKey)).expect(200);
      expect(csv.text).not.toContain('function');
      expect(csv.text).toContain(',x,y,Ann,');
    });

    it('sends a browser post on with 303 to the form’s redirect URL, or to _redirect on the same site', async () => {
      const marker = unique();
      const res = await t.http
        .post(`/${domain}/quote`)
        .set({ ...browser, Origin: site })
        .type('form')
        .send({ name: 'Bob', email: 'bob@example.org', message: marker })
        .expect(303);
      expect(res.headers.location).toBe(`${site}/thanks`);
      const mail = await sink.waitFor(mailWith(marker));
      expect(mail.envelope.rcptTo).toEqual(['sales@acme.example']);
      expect(mail.parsed!.subject).toBe('New quote request');
      expect(mail.parsed!.from!.value[0].address).toBe(`forms@${domain}`);

      const own = await t.http
        .post(`/${domain}/quote`)
        .set({ ...browser, Origin: site })
        .type('form')
        .send({ message: unique(), _redirect: `${site}/merci` })
        .expect(303);
      expect(own.headers.location).toBe(`${site}/merci`);
      // Not an open redirect: _redirect to another site falls back to the form's URL.
      const away = await t.http
        .post(`/${domain}/quote`)
        .set({ ...browser, Origin: site })
        .type('form')
        .send({ message: unique(), _redirect: 'https://evil.example/' })
        .expect(303);
      expect(away.headers.location).toBe(`${site}/thanks`);
    });

    it('delivers /{domain}/send and /v1/{domain}/send to the contactRecipients, and a form without recipients too', async () => {
      for (const path of [`/${domain}/send`, `/v1/${domain}/send`, `/${domain}/feedback`]) {
        const marker = unique();
        await t.http
          .post(path)
          .set({ ...json, Origin: `https://shop.${domain}` })
          .send({ name: 'Cy', email: 'cy@example.org', message: marker })
          .expect(200);
        const mail = await sink.waitFor(mailWith(marker));
        expect(mail.envelope.rcptTo).toEqual(['contact@acme.example']);
      }
      // The contact form needs an email and a message.
      const res = await t.http
        .post(`/${domain}/send`)
        .set({ ...json, Origin: site })
        .send({ name: 'Cy' })
        .expect(400);
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['email', 'message']);
    });

    it('delivers collection forms at /c/{collection}/{form} and /f/{collection}/{form}', async () => {
      await t.http
        .post('/collections')
        .set(bearer(admin.adminKey))
        .send({ slug: 'website', forms: { signup: { to: 'growth@acme.example', rateLimit: 1000 } } })
        .expect(201);
      // Another account's collection of the same slug does not take the post.
      await t.http
        .post('/collections')
        .set(bearer(other.adminKey))
        .send({ slug: 'website', forms: { signup: { to: 'thief@other.example' } } })
        .expect(201);
      for (const path of ['/c/website/signup', '/f/website/signup']) {
        const marker = unique();
        await t.http
          .post(path)
          .set({ ...json, Origin: site })
          .send({ email: 'dee@example.org', note: marker })
          .expect(200);
        const mail = await sink.waitFor(mailWith(marker));
        expect(mail.envelope.rcptTo).toEqual(['growth@acme.example']);
      }
    });

    it('answers /submit/{form} in JSON, by id or (with a key) by slug', async () => {
      const formId = await createForm({});
      const marker = unique();
      const res = await t.http
        .post(`/submit/${formId}`)
        .set({ ...browser, Origin: site })
        .type('form')
        .send({ message: marker })
        .expect(200);
      expect(res.body).toMatchObject({ success: true, message: expect.any(String) });
      await sink.waitFor(mailWith(marker));
      const bySlug = await t.http.post('/submit/quote').set('X-Api-Key', admin.adminKey).send({ message: unique() }).expect(200);
      expect(bySlug.body.success).toBe(true);
      await t.http.post('/submit/quote').send({ message: unique() }).expect(404);
    });

    it('attaches uploaded files and refuses executables and HTML by their bytes', async () => {
      const formId = await createForm({});
      const marker = unique();
      const pdf = Buffer.from(`%PDF-1.4\n% ${marker}\n`);
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .field('message', marker)
        .attach('cv', pdf, 'cv.pdf')
        .expect(200);
      const mail = await sink.waitFor(mailWith(marker));
      expect(mail.parsed!.attachments.map((a) => [a.filename, a.content.equals(pdf)])).toEqual([['cv.pdf', true]]);

      const exe = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200)]);
      const refused = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .field('message', 'x')
        .attach('cv', exe, 'invoice.pdf')
        .expect(400);
      expect(refused.body.error.details.fields[0].field).toBe('cv');
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .field('message', 'x')
        .attach('page', Buffer.from('<html><script>alert(1)</script></html>'), 'notes.txt')
        .expect(400);
    });
  });

  describe('who may post', () => {
    it('refuses a post without an origin, from an unverified origin, and to an unknown form', async () => {
      const formId = await createForm({});
      const none = await t.http.post(`/f/${formId}`).set(json).send({ message: 'x' }).expect(403);
      expect(none.body.error.code).toBe('ORIGIN_NOT_ALLOWED');
      const foreign = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: 'https://evil.example' })
        .send({ message: 'x' })
        .expect(403);
      expect(foreign.body.error.code).toBe('ORIGIN_NOT_ALLOWED');
      // A verified domain's subdomain may post; the Referer counts when there is no Origin.
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Referer: `https://blog.${domain}/post/1` })
        .send({ message: 'x' })
        .expect(200);
      await t.http
        .post('/f/frm_doesnotexist')
        .set({ ...json, Origin: site })
        .send({ message: 'x' })
        .expect(404);
      await t.http
        .post(`/nope.example/contact`)
        .set({ ...json, Origin: site })
        .send({ message: 'x' })
        .expect(404);
    });

    it('takes a public token for its own domain only, and keys of the form’s account only', async () => {
      const mine = await createKey(t, admin.adminKey, { keyType: 'public', domainScope: domain });
      await t.http
        .post(`/v1/${domain}/send`)
        .set('X-Public-Token', mine.key)
        .set('Origin', site)
        .send({ email: 'e@example.org', message: unique() })
        .expect(200);
      await createVerifiedDomain(t, other.accountId, 'other-forms.test');
      const theirs = await createKey(t, other.adminKey, { keyType: 'public', domainScope: 'other-forms.test' });
      const refused = await t.http
        .post(`/v1/${domain}/send`)
        .set('X-Public-Token', theirs.key)
        .send({ email: 'e@example.org', message: 'x' })
        .expect(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
      // A server-side key needs no origin; another account's key sees a 404, like an unknown form.
      const formId = await createForm({});
      await t.http.post(`/f/${formId}`).set('X-Api-Key', admin.adminKey).send({ message: unique() }).expect(200);
      await t.http.post(`/f/${formId}`).set('X-Api-Key', other.adminKey).send({ message: unique() }).expect(404);
    });

    it('answers CORS preflights for allowed origins only', async () => {
      const formId = await createForm({});
      const ok = await t.http
        .options(`/f/${formId}`)
        .set({ Origin: site, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' })
        .expect(204);
      expect(ok.headers['access-control-allow-origin']).toBe(site);
      expect(ok.headers['access-control-allow-methods']).toContain('POST');
      const refused = await t.http
        .options(`/f/${formId}`)
        .set({ Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' })
        .expect(403);
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('spam and limits', () => {
    it('answers a honeypot post like a success, stores it as spam and sends nothing', async () => {
      const formId = await createForm({});
      const marker = unique();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: marker, _service_honeypot: 'http://spam.example' })
        .expect(200);
      expect(res.body.success).toBe(true);
      await expectNoMail(marker);
      const page = await t.http.get(`/api/forms/${formId}/submissions?status=spam`).set(bearer(admin.adminKey)).expect(200);
      expect(page.body.submissions.map((s: { id: string }) => s.id)).toEqual([res.body.submissionId]);
    });

    it('blocks content-filtered posts when the form asks for it', async () => {
      const formId = await createForm({ spam_protection: { content_filter: true } });
      const marker = unique();
      const links = Array.from({ length: 6 }, (_, i) => `https://cheap-seo${i}.example`).join(' ');
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: `${marker} buy backlinks ${links}` })
        .expect(200);
      await expectNoMail(marker);
    });

    it('refuses the 11th post of an hour from one address with 429 and its headers', async () => {
      const res = await t.http
        .post('/api/forms')
        .set(bearer(admin.adminKey))
        .send({ name: 'Limited', to: 'owner@acme.example', allowedOrigins: [site] })
        .expect(201);
      for (let i = 0; i < 10; i++) {
        await t.http
          .post(`/f/${res.body.id}`)
          .set({ ...json, Origin: site })
          .send({ message: `post ${i}` })
          .expect(200);
      }
      const limited = await t.http
        .post(`/f/${res.body.id}`)
        .set({ ...json, Origin: site })
        .send({ message: 'one too many' })
        .expect(429);
      expect(limited.body.error.details).toMatchObject({ limit: 10, remaining: 0, scope: 'ip' });
      expect(limited.headers['retry-after']).toBeDefined();
      expect(limited.headers['x-ratelimit-limit']).toBe('10');
    });

    it('requires a valid ALTCHA solution when the form turns the challenge on', async () => {
      const formId = await createForm({ spam_protection: { challenge: 'altcha' } });
      const challenge = (await t.http.get(`/forms/${formId}/challenge`).expect(200)).body;
      const { promise } = solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber);
      const solution = await promise;
      const payload = Buffer.from(JSON.stringify({ ...challenge, number: solution!.number })).toString('base64');
      const marker = unique();
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: marker, altcha: payload })
        .expect(200);
      await sink.waitFor(mailWith(marker));

      const wrong = Buffer.from(JSON.stringify({ ...challenge, number: solution!.number + 1 })).toString('base64');
      const failed = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: 'x', altcha: wrong })
        .expect(400);
      expect(failed.body.error.code).toBe('CHALLENGE_FAILED');
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: 'x' })
        .expect(400);
      // A solution works once.
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: 'again', altcha: payload })
        .expect(400);
    });

    it('issues and verifies the ALTCHA challenge at the difficulty the form sets', async () => {
      const solved = async (formId: string) => {
        const challenge = (await t.http.get(`/forms/${formId}/challenge`).expect(200)).body;
        const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
        return {
          maxnumber: challenge.maxnumber,
          payload: Buffer.from(JSON.stringify({ ...challenge, number: solution!.number })).toString('base64'),
        };
      };
      const post = (formId: string, altcha: string) =>
        t.http
          .post(`/f/${formId}`)
          .set({ ...json, Origin: site })
          .send({ message: unique(), altcha });

      expect((await solved(await createForm({ spam_protection: { challenge: 'altcha' } }))).maxnumber).toBe(100_000);

      const formId = await createForm({ spam_protection: { challenge: 'altcha', altcha_maxnumber: 20_000 } });
      const first = await solved(formId);
      expect(first.maxnumber).toBe(20_000);
      await post(formId, first.payload).expect(200);

      // Raised: a challenge fetched before is refused, a new one is as hard as the form now asks.
      const fetchedBefore = await solved(formId);
      await t.http
        .patch(`/api/forms/${formId}`)
        .set(bearer(admin.adminKey))
        .send({ spam_protection: { challenge: 'altcha', altcha_maxnumber: 40_000 } })
        .expect(200);
      await new Promise((resolve) => setTimeout(resolve, 1100)); // the submission path keeps a form for a second
      const refused = await post(formId, fetchedBefore.payload).expect(400);
      expect(refused.body.error).toMatchObject({
        code: 'CHALLENGE_FAILED',
        message: expect.stringContaining('easier than the form now asks'),
      });
      const after = await solved(formId);
      expect(after.maxnumber).toBe(40_000);
      await post(formId, after.payload).expect(200);
    });

    it('refuses an ALTCHA difficulty outside its bounds, naming the setting', async () => {
      const field = 'spam_protection.altcha_maxnumber';
      const message = 'must be a whole number from 10000 to 10000000';
      for (const altcha_maxnumber of [9_999, 10_000_001, 'hard']) {
        const res = await t.http
          .post('/api/forms')
          .set(bearer(admin.adminKey))
          .send({ name: 'Hard', to: 'owner@acme.example', spam_protection: { challenge: 'altcha', altcha_maxnumber } })
          .expect(400);
        expect(res.body.error.details.fields).toEqual([{ field, message }]);
      }
      const formId = await createForm({ spam_protection: { challenge: 'altcha' } });
      const res = await t.http
        .patch(`/api/forms/${formId}`)
        .set(bearer(admin.adminKey))
        .send({ spam_protection: { challenge: 'altcha', altcha_maxnumber: 0 } })
        .expect(400);
      expect(res.body.error.details.fields).toEqual([{ field, message }]);
    });

    it('verifies Turnstile tokens against the configured verify URL', async () => {
      const formId = await createForm({ spam_protection: { challenge: 'turnstile', captcha_secret: 'site-secret' } });
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: unique(), 'cf-turnstile-response': 'good-token' })
        .expect(200);
      expect(captchaCalls.at(-1)?.get('response')).toBe('good-token');
      const failed = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ message: 'x', 'cf-turnstile-response': 'bad' })
        .expect(400);
      expect(failed.body.error.code).toBe('CHALLENGE_FAILED');
    });
  });

  describe('validation and replays', () => {
    it('names every missing required field and a malformed email in one 400', async () => {
      const formId = await createForm({ requiredFields: ['name', 'message'] });
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ email: 'not-an-address', name: '  ' })
        .expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['email', 'message', 'name']);
    });

    it('replays an Idempotency-Key and submits once', async () => {
      const formId = await createForm({});
      const marker = unique();
      const post = () =>
        t.http
          .post(`/f/${formId}`)
          .set({ ...json, Origin: site, 'Idempotency-Key': `submit-${marker}` })
          .send({ message: marker });
      const first = await post().expect(200);
      const second = await post().expect(200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body.submissionId).toBe(first.body.submissionId);
      const page = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(admin.adminKey)).expect(200);
      expect(page.body.total).toBe(1);
    });

    it('sends an acknowledgment from a Liquid template of the account', async () => {
      await t.http
        .post('/email/templates')
        .set(bearer(admin.adminKey))
        .send({
          name: 'thanks-ack',
          type: 'acknowledgment',
          subject: 'Thanks {{ form.name || "friend" }}',
          text: 'We got it on {{ timestamp | date: "%Y-%m-%d" }}:\n{{ form.message }}',
          html: '<p>{{ form.message | nl2br }}</p>{% if form.company %}<p>{{ form.company }}</p>{% endif %}',
        })
        .expect(201);
      const formId = await createForm({ acknowledgment: { enabled: true, template: 'thanks-ack' } });
      const marker = unique();
      await t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site })
        .send({ email: 'eve@example.org', message: `line one\n<i>${marker}</i>` })
        .expect(200);
      const ack = await sink.waitFor(
        (mail) => mail.envelope.rcptTo.includes('eve@example.org') && (mail.parsed?.text ?? '').includes(marker),
      );
      expect(ack.parsed!.subject).toBe('Thanks friend');
      expect(ack.parsed!.text).toMatch(/We got it on \d{4}-\d{2}-\d{2}/);
      expect(String(ack.parsed!.html)).toContain('line one<br');
      expect(String(ack.parsed!.html)).toContain('&lt;i&gt;');
    });
  });
});
