import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchBrowser, saveScreenshot } from '../support/browser';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { peExecutable } from '../support/zip-file';

/**
 * What a website's page sees of a form post: errors its fetch() can read (CORS on every answer to an allowed origin),
 * JSON for scripts and a redirect for the browser's own posts, error and thank-you pages in the visitor's language
 * that link back to the page that posted.
 */
describe('form answers a page can show', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  const site = 'https://www.pages-site.test';
  const contactPage = `${site}/contact.html?from=nav`;
  const unique = () => randomBytes(5).toString('hex');
  /** What Chromium sends with a plain `<form method=post>` submission. */
  const navigation = {
    Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
    'Sec-Fetch-Mode': 'navigate',
    'Sec-Fetch-Dest': 'document',
  };
  /** What fetch() sends by default. */
  const fetchLike = { Accept: '*/*', 'Sec-Fetch-Mode': 'cors', 'Sec-Fetch-Dest': 'empty' };

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, RATE_LIMIT_ENABLED: 'true' } });
    adminKey = (await createAccount(t, 'Pages')).adminKey;
  });

  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  async function createForm(body: Record<string, unknown> = {}): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(adminKey))
      .send({ name: 'Contact', to: 'owner@pages.example', rateLimit: 1000, allowedOrigins: [site], ...body });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  describe('CORS on error answers', () => {
    it('lets an allowed origin read a 400 with its fields, and gives a foreign origin nothing to read', async () => {
      const formId = await createForm();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...fetchLike, Origin: site })
        .type('form')
        .send({ email: 'not-an-address', message: unique() })
        .expect(400);
      expect(res.headers['access-control-allow-origin']).toBe(site);
      expect(res.headers.vary).toMatch(/Origin/);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: { fields: [{ field: 'email', message: 'must be a valid email address' }] },
      });

      const foreign = await t.http
        .post(`/f/${formId}`)
        .set({ ...fetchLike, Origin: 'https://evil.test' })
        .type('form')
        .send({ email: 'not-an-address' })
        .expect(403);
      expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
      expect(foreign.body.error.code).toBe('ORIGIN_NOT_ALLOWED');

      const missing = await t.http
        .post('/f/frm_doesnotexist0000')
        .set({ ...fetchLike, Origin: site })
        .type('form')
        .send({ message: 'x' })
        .expect(404);
      expect(missing.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('lets an allowed origin read an upload refusal, from the pipeline and from the uploads interceptor', async () => {
      const formId = await createForm();
      const refused = await t.http
        .post(`/f/${formId}`)
        .set({ ...fetchLike, Origin: site })
        .field('message', unique())
        .attach('cv', peExecutable(), { filename: 'cv.pdf', contentType: 'application/pdf' })
        .expect(400);
      expect(refused.headers['access-control-allow-origin']).toBe(site);
      expect(refused.body.error.details.fields[0]).toMatchObject({ field: 'cv', message: expect.stringMatching(/^"cv.pdf" is refused/) });

      // One file over 10 MB: refused by multer inside the uploads interceptor, before any handler runs.
      const tooLarge = await t.http
        .post(`/f/${formId}`)
        .set({ ...fetchLike, Origin: site })
        .field('message', unique())
        .attach('video', Buffer.alloc(10 * 1024 * 1024 + 1, 0x61), { filename: 'video.txt', contentType: 'text/plain' })
        .expect(413);
      expect(tooLarge.headers['access-control-allow-origin']).toBe(site);
      expect(tooLarge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    });

    it('lets an allowed origin read the rate limit', async () => {
      const formId = await createForm({ rateLimit: 1 });
      const post = () =>
        t.http
          .post(`/f/${formId}`)
          .set({ ...fetchLike, Origin: site })
          .type('form')
          .send({ message: unique() });
      await post().expect(200);
      const limited = await post().expect(429);
      expect(limited.headers['access-control-allow-origin']).toBe(site);
      expect(limited.body.error.details.retry_after).toBeGreaterThan(3000);
    });
  });

  describe('scripts get JSON, browsers a redirect', () => {
    it('answers fetch() (Sec-Fetch-Mode: cors, Accept */*) with JSON 200, not a 303', async () => {
      const formId = await createForm();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...fetchLike, Origin: site })
        .type('form')
        .send({ message: unique() });
      expect(res.status).toBe(200);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['access-control-allow-origin']).toBe(site);
      expect(res.body).toMatchObject({ success: true, submissionId: expect.stringMatching(/^sub_/) });
      // An Accept without text/html is a script too, even without Sec-Fetch-Mode (curl's default).
      const curl = await t.http.post(`/f/${formId}`).set({ Accept: '*/*', Origin: site }).type('form').send({ message: unique() });
      expect(curl.status).toBe(200);
    });

    it('still redirects a navigation, and a post without Accept or Sec-Fetch-Mode (D-25)', async () => {
      const formId = await createForm({ redirect: `${site}/thanks` });
      const nav = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, Origin: site })
        .type('form')
        .send({ message: unique() });
      expect(nav.status).toBe(303);
      expect(nav.headers.location).toBe(`${site}/thanks`);
      const bare = await t.http.post(`/f/${formId}`).set({ Origin: site }).type('form').send({ message: unique() });
      expect(bare.status).toBe(303);
    });
  });

  describe('error pages', () => {
    it('answers a navigation with an invalid email with a German page naming the fields and linking back', async () => {
      const formId = await createForm({ requiredFields: ['name'] });
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, Origin: site, Referer: contactPage, 'Accept-Language': 'de-DE,de;q=0.9,en;q=0.8' })
        .type('form')
        .send({ email: 'ada-at-example', message: unique() })
        .expect(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('<html lang="de">');
      expect(res.text).toContain('Ihre Nachricht wurde nicht gesendet');
      expect(res.text).toContain('<strong>email</strong>: muss eine gültige E-Mail-Adresse sein');
      expect(res.text).toContain('<strong>name</strong>: dieses Feld ist erforderlich');
      expect(res.text).toContain(`<a href="${contactPage}">Zurück zum Formular</a>`);
      expect(res.text).not.toContain('{"error"');
    });

    it('follows _language over Accept-Language, and says a refused file in that language, its reason as is', async () => {
      const formId = await createForm();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, Origin: site, Referer: contactPage, 'Accept-Language': 'de' })
        .field('_language', 'fr')
        .field('message', unique())
        .attach('cv', peExecutable(), { filename: 'cv.pdf', contentType: 'application/pdf' })
        .expect(400);
      expect(res.text).toContain('<html lang="fr">');
      expect(res.text).toContain('Votre message n’a pas été envoyé');
      expect(res.text).toMatch(/<strong>cv<\/strong>: le fichier « cv\.pdf » a été refusé: /);
      expect(res.text).toContain('Retour au formulaire');
    });

    it('says the rate limit in human terms, in Spanish', async () => {
      const formId = await createForm({ rateLimit: 1 });
      const post = () =>
        t.http
          .post(`/f/${formId}`)
          .set({ ...navigation, Origin: site, Referer: contactPage, 'Accept-Language': 'es-ES' })
          .type('form')
          .send({ message: unique() });
      await post().expect(303);
      const limited = await post().expect(429);
      expect(limited.headers['content-type']).toMatch(/^text\/html/);
      expect(limited.text).toMatch(/Vuelva a intentarlo en aproximadamente \d+ horas?( \d+ minutos?)?\./);
      expect(limited.text).not.toMatch(/\d{3,} s\b/);
    });

    it('links back only to a page of an origin that may post to the form', async () => {
      const formId = await createForm();
      const phish = 'https://evil.test/login';
      // A foreign origin: its 403 page links nowhere, it points to the back button.
      const foreign = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, Origin: 'https://evil.test', Referer: phish })
        .type('form')
        .send({ message: unique() })
        .expect(403);
      expect(foreign.headers['content-type']).toMatch(/^text\/html/);
      expect(foreign.text).not.toContain('evil.test');
      expect(foreign.text).not.toContain('<a ');
      expect(foreign.text).toContain('back button');
      // An allowed origin with a Referer of another host: the link goes to the allowed origin, not to the Referer.
      const mixed = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, Origin: site, Referer: phish })
        .type('form')
        .send({ email: 'bad' })
        .expect(400);
      expect(mixed.text).not.toContain('evil.test');
      expect(mixed.text).toContain(`<a href="${site}/">Back to the form</a>`);
    });

    it('answers an Android WebView’s page load (X-Requested-With: its app) with a page', async () => {
      const formId = await createForm();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, 'X-Requested-With': 'com.example.shop', Origin: site, Referer: contactPage })
        .type('form')
        .send({ email: 'bad' })
        .expect(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain(`<a href="${contactPage}">Back to the form</a>`);
    });

    it('links only to http(s) pages, escaped', async () => {
      const formId = await createForm();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, Origin: site, Referer: `${site}/a"><script>alert(1)</script>` })
        .type('form')
        .send({ email: 'bad' })
        .expect(400);
      expect(res.text).not.toContain('<script>alert(1)');
      expect(res.text).toContain(`href="${site}/a%22%3E%3Cscript%3Ealert(1)%3C/script%3E"`);
    });
  });

  describe('the thank-you page', () => {
    it('is in French and links back to the page that posted', async () => {
      const formId = await createForm();
      const res = await t.http
        .post(`/f/${formId}`)
        .set({ ...navigation, Origin: site, Referer: contactPage, 'Accept-Language': 'fr-FR,fr;q=0.9' })
        .type('form')
        .send({ message: unique() })
        .expect(303);
      const location = new URL(res.headers.location);
      expect(`${location.origin}${location.pathname}`).toBe('http://mailroom.test/forms/thank-you');
      expect(location.searchParams.get('lang')).toBe('fr');
      expect(location.searchParams.get('back')).toBe(contactPage);

      const page = await t.http.get(`/forms/thank-you${location.search}`).expect(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.text).toContain('<html lang="fr">');
      expect(page.text).toContain('Merci !');
      expect(page.text).toContain(`<a href="${contactPage}">Retour au site</a>`);
    });

    it('links to no page that a post did not put there', async () => {
      const forged = new URLSearchParams({ lang: 'de', back: 'https://evil.test/phish', sig: 'AAAAAAAAAAAAAAAAAAAAAA' });
      const page = await t.http.get(`/forms/thank-you?${forged.toString()}`).expect(200);
      expect(page.text).toContain('Vielen Dank!');
      expect(page.text).not.toContain('evil.test');
    });
  });

  describe('in a real browser (chromium)', () => {
    let browser: Browser;
    let server: Server;
    let base: string;
    let formId: string;
    let submitUrl: string;

    beforeAll(async () => {
      server = createServer((req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
        res.end(
          // Without it a browser sends a cross-origin post only the origin as Referer: the link back would lead to the home page.
          '<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer-when-downgrade">' +
            `<title>Kontakt</title></head><body>` +
            `<form method="POST" action="${submitUrl}"><input name="email"><textarea name="message"></textarea>` +
            `<button type="submit">Senden</button></form></body></html>`,
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      formId = await createForm({ allowedOrigins: [base] });
      submitUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/f/${formId}`;
      browser = await launchBrowser();
    });

    afterAll(async () => {
      await browser?.close();
      await new Promise((resolve) => server?.close(resolve));
    });

    it('fetch() from the site reads the 400 and its fields instead of a network error', async () => {
      const page = await browser.newPage();
      await page.goto(`${base}/kontakt.html`);
      const answer = await page.evaluate(async (url) => {
        const body = new FormData();
        body.set('email', 'nope');
        body.set('message', 'hello');
        const res = await fetch(url, { method: 'POST', body });
        const answer = (await res.json()) as { error: { details: { fields: unknown } } };
        return { status: res.status, fields: answer.error.details.fields };
      }, submitUrl);
      expect(answer.status).toBe(400);
      expect(answer.fields).toEqual([{ field: 'email', message: 'must be a valid email address' }]);
      await page.close();
    });

    it('a plain form post with a bad address shows a German error page that leads back to the form', async () => {
      const page = await browser.newPage({ locale: 'de-DE' });
      await page.goto(`${base}/kontakt.html`);
      await page.fill('input[name=email]', 'nope');
      await page.fill('textarea[name=message]', 'hallo');
      await page.click('button[type=submit]');
      await page.waitForURL(submitUrl);
      expect(await page.textContent('h1')).toBe('Ihre Nachricht wurde nicht gesendet');
      expect(await page.textContent('li')).toBe('email: muss eine gültige E-Mail-Adresse sein');
      await saveScreenshot(page, 'form-pages-error-de');
      await page.click('text=Zurück zum Formular');
      await page.waitForURL(`${base}/kontakt.html`);
      await page.close();
    });
  });
});
