import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, saveScreenshot } from '../support/browser';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

/** A website of its own on 127.0.0.1: a contact page posting to Mailroom, and the page it sends visitors to. */
interface Site {
  base: string;
  server: Server;
}

function contactPage(action: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Contact us</title></head><body>
<h1>Contact us</h1>
<form method="POST" action="${action}" enctype="multipart/form-data">
  <label>Name <input name="name" required></label>
  <label>Email <input name="email" type="email" required></label>
  <label>Message <textarea name="message"></textarea></label>
  <label><input type="checkbox" name="topics" value="sales"> Sales</label>
  <label><input type="checkbox" name="topics" value="support"> Support</label>
  <input type="hidden" name="_service_honeypot" value="">
  <button type="submit">Send</button>
</form></body></html>`;
}

const THANKS_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Thanks</title></head><body><h1>Thanks for writing</h1></body></html>';

async function startSite(formAction: () => string): Promise<Site> {
  const server = createServer((req, res) => {
    const page = req.url === '/contact.html' ? contactPage(formAction()) : req.url === '/thanks.html' ? THANKS_PAGE : null;
    res.writeHead(page ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(page ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** Whether a received message carries the value anywhere (raw source, or decoded text and HTML). */
function mentions(mail: ReceivedMail, value: string): boolean {
  return [mail.raw.toString(), mail.parsed?.text, mail.parsed?.html].some((part) => typeof part === 'string' && part.includes(value));
}

describe('form posts from a real browser (chromium)', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let site: Site;
  let foreignSite: Site;
  let formId: string;
  let adminKey: string;
  let submitUrl: string;
  const owner = 'owner@example.org';
  const subject = 'Contact from the website';
  const unique = () => randomBytes(6).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url } });
    const appUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    site = await startSite(() => submitUrl);
    foreignSite = await startSite(() => submitUrl);
    adminKey = (await createAccount(t, 'Acme')).adminKey;
    const created = await t.http
      .post('/api/forms')
      .set(bearer(adminKey))
      .send({ name: 'Website contact', to: owner, subject, redirect: `${site.base}/thanks.html`, allowedOrigins: [site.base] });
    if (created.status !== 201) throw new Error(`form creation failed: ${created.status} ${JSON.stringify(created.body)}`);
    formId = created.body.id;
    submitUrl = `${appUrl}/f/${formId}`;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all([site, foreignSite].filter(Boolean).map((s) => new Promise((resolve) => s.server.close(resolve))));
    await t?.close();
    await sink?.close();
  });

  let page: Page;
  beforeEach(async () => {
    page = await browser.newPage();
  });
  afterEach(async () => {
    await page.close();
  });

  async function fillContactForm(marker: string): Promise<{ name: string; email: string; message: string }> {
    const typed = {
      name: `Ada Lovelace ${marker}`,
      email: `ada.${marker}@example.org`,
      message: `Hello <script>alert(1)</script>\nsecond line ${marker}`,
    };
    await page.fill('input[name=name]', typed.name);
    await page.fill('input[name=email]', typed.email);
    await page.fill('textarea[name=message]', typed.message);
    await page.check('input[name=topics][value=sales]');
    await page.check('input[name=topics][value=support]');
    return typed;
  }

  /** Submits the form and returns Mailroom's answer to the post (before any redirect is followed). */
  async function submit(): Promise<{ status: number; location: string | undefined }> {
    const answer = page.waitForResponse((res) => res.url() === submitUrl && res.request().method() === 'POST');
    await page.click('button[type=submit]');
    const res = await answer;
    return { status: res.status(), location: res.headers()['location'] };
  }

  it('posts multipart from an allowed origin, follows the 303 to the redirect page and mails every field, escaped', async () => {
    const marker = unique();
    await page.goto(`${site.base}/contact.html`);
    const typed = await fillContactForm(marker);
    const arrived = page.waitForURL(`${site.base}/thanks.html`);
    const answer = await submit();
    await arrived;
    expect(answer).toEqual({ status: 303, location: `${site.base}/thanks.html` });
    expect(await page.textContent('h1')).toBe('Thanks for writing');
    await saveScreenshot(page, 'forms-browser-thanks');

    const mail = await sink.waitFor((m) => m.parsed?.text?.includes(marker) ?? false);
    const parsed = mail.parsed!;
    expect(mail.envelope.rcptTo).toEqual([owner]);
    expect(parsed.from?.value[0].address).toBe(t.config.formsFrom.address);
    expect(parsed.subject).toBe(subject);
    expect(parsed.replyTo?.value.map((a) => a.address)).toEqual([typed.email]);

    const text = parsed.text!;
    expect(text).toContain(`name: ${typed.name}`);
    expect(text).toContain(`email: ${typed.email}`);
    expect(text).toContain('Hello <script>alert(1)</script>');
    expect(text).toContain(`second line ${marker}`);
    expect(text).toContain('topics: sales, support');
    expect(text).not.toContain('_service_honeypot');

    const html = parsed.html as string;
    expect(html).toContain(typed.name);
    expect(html).toContain(typed.email);
    expect(html).toContain('Hello &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain(`second line ${marker}`);
    expect(html).toContain('sales, support');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('_service_honeypot');

    // The checkboxes sharing a name arrive as a list, not as the last value.
    const stored = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(adminKey)).expect(200);
    const submission = stored.body.submissions.find((s: { fields: Record<string, unknown> }) => s.fields.name === typed.name);
    expect(submission).toMatchObject({
      status: 'accepted',
      origin: site.base,
      fields: { email: typed.email, topics: ['sales', 'support'] },
    });
  });

  it('refuses the same form posted from an origin that is not allowed, and mails nothing', async () => {
    const marker = unique();
    await page.goto(`${foreignSite.base}/contact.html`);
    await fillContactForm(marker);
    const answer = await submit();
    expect(answer.status).toBe(403);
    await page.waitForURL(submitUrl);
    expect(await page.content()).toContain('ORIGIN_NOT_ALLOWED');
    await saveScreenshot(page, 'forms-browser-origin-refused');

    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(sink.messages.some((m) => mentions(m, marker))).toBe(false);
  });

  it('answers a filled honeypot like a success and mails nothing', async () => {
    const marker = unique();
    await page.goto(`${site.base}/contact.html`);
    await fillContactForm(marker);
    await page
      .locator('input[name=_service_honeypot]')
      .evaluate((input) => ((input as unknown as { value: string }).value = 'https://spam.example'));
    const arrived = page.waitForURL(`${site.base}/thanks.html`);
    const answer = await submit();
    await arrived;
    expect(answer.status).toBe(303);

    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(sink.messages.some((m) => mentions(m, marker))).toBe(false);
  });
});
