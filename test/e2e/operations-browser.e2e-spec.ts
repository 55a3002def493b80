import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { BULL_BOARD_PATH } from '../../src/operator/bull-board';
import { JobName, QueueName } from '../../src/queue/queue.constants';
import { launchBrowser, saveScreenshot } from '../support/browser';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

/** Bounded waits for what the pages render (Swagger UI parses a large document; Bull Board polls). */
const UI_TIMEOUT_MS = 20_000;

describe('operator pages in a real browser (chromium): Swagger UI and Bull Board', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let context: BrowserContext;
  let adminKey: string;
  let usageKey: string;
  /** PUBLIC_URL, the server Swagger UI sends "Try it out" requests to; the browser resolves it to the app. */
  let publicUrl: string;
  const domain = 'mail.acme.test';
  const unique = () => randomBytes(6).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url } });
    const account = await createAccount(t, 'Acme');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
    usageKey = (await createKey(t, adminKey, { keyType: 'usage' })).key;
    publicUrl = t.config.publicUrl;
    // The browser sees the app at its public address, as a user would; every other host is unreachable, so
    // the pages cannot depend on the internet (Bull Board links a web font).
    const port = (t.app.getHttpServer().address() as AddressInfo).port;
    browser = await launchBrowser([`--host-rules=MAP ${new URL(publicUrl).hostname} 127.0.0.1:${port}, MAP * ~NOTFOUND`]);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await sink?.close();
  });

  afterEach(async () => {
    await context?.close();
  });

  async function waitForStatus(messageId: string, status: string): Promise<void> {
    await waitFor(
      `message ${messageId} ${status}`,
      async () => (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body.status,
      (current) => current === status,
    );
  }

  it('Swagger UI: authorizes with a usage key and sends an email from "Try it out"', async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await page.goto(`${publicUrl}/docs`);
    await page.locator('#operations-tag-Email').waitFor();

    await page.locator('.scheme-container').getByRole('button', { name: 'Authorize' }).click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    const bearerScheme = dialog.locator('.auth-container').filter({ hasText: 'BearerKey' });
    await bearerScheme.locator('input').fill(usageKey);
    await bearerScheme.getByRole('button', { name: 'Apply credentials' }).click();
    await bearerScheme.getByRole('button', { name: 'Remove authorization' }).waitFor();
    await bearerScheme.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });

    const operation = page
      .locator('.opblock-tag-section')
      .filter({ has: page.locator('#operations-tag-Email') })
      .locator('.opblock-post')
      .filter({ has: page.locator('.opblock-summary-path[data-path="/email/send"]') });
    await operation.locator('.opblock-summary').click();
    await operation.getByRole('button', { name: 'Try it out' }).click();

    const subject = `Sent from Swagger UI ${unique()}`;
    const message = { from: `Acme <hello@${domain}>`, to: 'ada@example.org', subject, text: 'Hello from the API docs' };
    await operation.locator('textarea.body-param__text').fill(JSON.stringify(message, null, 2));
    const answered = page.waitForResponse((res) => res.url() === `${publicUrl}/email/send` && res.request().method() === 'POST');
    await operation.getByRole('button', { name: 'Execute' }).click();
    const response = await answered;
    expect(response.request().headers()['authorization']).toBe(`Bearer ${usageKey}`);
    expect(response.status()).toBe(200);
    const body = (await response.json()) as { success: boolean; messageId: string; status: string };
    expect(body).toEqual({ success: true, messageId: expect.stringMatching(/^msg_/), status: 'queued' });

    // What the page shows: the live response's status code and the body with the message id.
    const shown = operation.locator('.live-responses-table .response');
    await shown.locator('.response-col_status', { hasText: '200' }).waitFor();
    await shown.locator('.response-col_description', { hasText: body.messageId }).waitFor();

    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    expect(mail.envelope.rcptTo).toEqual(['ada@example.org']);
    expect(mail.parsed?.from?.value[0].address).toBe(`hello@${domain}`);
    expect(mail.parsed?.text?.trim()).toBe('Hello from the API docs');

    // The whole page is tens of thousands of pixels tall: the operation, with its request and answer, is what matters.
    await saveScreenshot(page, 'swagger-send-email', operation);
  });

  it('Bull Board: asks for basic auth, then shows the email queue with the completed job', async () => {
    const subject = `Seen on the board ${unique()}`;
    const sent = await t.http
      .post('/email/send')
      .set(bearer(usageKey))
      .send({ from: `Acme <hello@${domain}>`, to: 'grace@example.org', subject, text: 'queued and done' })
      .expect(200);
    const messageId: string = sent.body.messageId;
    await sink.waitFor((m) => m.parsed?.subject === subject);
    await waitForStatus(messageId, 'sent');

    context = await browser.newContext();
    const anonymous = await context.newPage();
    // Headless chromium has no one to ask for the credentials: it ends the navigation with an error after the 401.
    const challenge = anonymous.waitForResponse(`${publicUrl}${BULL_BOARD_PATH}`);
    await expect(anonymous.goto(`${publicUrl}${BULL_BOARD_PATH}`)).rejects.toThrow(/ERR_INVALID_AUTH_CREDENTIALS/);
    const refused = await challenge;
    expect(refused.status()).toBe(401);
    expect(refused.headers()['www-authenticate']).toMatch(/^Basic realm="Mailroom queues"/);
    await context.close();

    context = await browser.newContext({ httpCredentials: { username: 'operator', password: t.operatorKey } });
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    const board = await page.goto(`${publicUrl}${BULL_BOARD_PATH}`);
    expect(board?.status()).toBe(200);
    await page.getByRole('link', { name: QueueName.Email, exact: true }).first().click();
    await page.waitForURL(`${publicUrl}${BULL_BOARD_PATH}/queue/${QueueName.Email}**`);
    await page.getByRole('link', { name: 'Completed' }).click();
    await page.waitForURL(/status=completed/);
    // The job id is the message id (EmailQueue): its card links to the job, named after the job type.
    const job = page.getByRole('link', { name: messageId, exact: true });
    await job.waitFor();
    expect(await job.getAttribute('href')).toBe(`${BULL_BOARD_PATH}/queue/${QueueName.Email}/${messageId}?status=completed`);
    await page.getByRole('heading', { name: JobName.DeliverEmail }).first().waitFor();

    await saveScreenshot(page, 'bull-board-email-queue');
  });

  it('Bull Board: operator.queues may look, only operator.queues.manage may clean; neither is no entry', async () => {
    const queue = t.app.get<Queue>(getQueueToken(QueueName.Webhooks), { strict: false });
    const deliveryId = `whd_browser_${unique()}`;
    // Due in an hour: no worker takes it.
    const job = await queue.add(JobName.DeliverWebhook, { deliveryId }, { delay: 3_600_000 });
    const keyHolding = async (permissions: string[]) => (await createKey(t, t.operatorKey, { keyType: 'admin', permissions })).key;
    const signIn = async (password: string): Promise<Page> => {
      await context?.close();
      context = await browser.newContext({ httpCredentials: { username: 'operator', password } });
      const page = await context.newPage();
      page.setDefaultTimeout(UI_TIMEOUT_MS);
      return page;
    };

    const outsider = await signIn(await keyHolding(['operator.metrics']));
    const refused = await outsider.goto(`${publicUrl}${BULL_BOARD_PATH}`);
    expect(refused?.status()).toBe(403);
    expect(await outsider.locator('body').innerText()).toContain('This key lacks the permission operator.queues');

    /** Opens the queue's delayed jobs, presses Clean all and confirms; answers Bull Board's API call. */
    const cleanAllDelayed = async (page: Page) => {
      await page.goto(`${publicUrl}${BULL_BOARD_PATH}/queue/${QueueName.Webhooks}?status=delayed`);
      await page.getByText(deliveryId).waitFor();
      await page.getByRole('button', { name: 'Clean all' }).click();
      const answered = page.waitForResponse((res) => res.request().method() === 'PUT');
      await page.getByRole('button', { name: 'Confirm' }).click();
      return answered;
    };

    const viewer = await signIn(await keyHolding(['operator.queues']));
    const viewed = await cleanAllDelayed(viewer);
    expect(viewed.url()).toBe(`${publicUrl}${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}/clean/delayed`);
    expect(viewed.status()).toBe(403);
    expect(await viewed.json()).toEqual({
      error: { code: 'FORBIDDEN', message: 'This key lacks the permission operator.queues.manage' },
      documentation: `${publicUrl}/docs#errors`,
    });
    expect(await queue.getJob(job.id)).not.toBeNull();
    await viewer.reload();
    await viewer.getByText(deliveryId).waitFor();
    await saveScreenshot(viewer, 'bull-board-clean-refused');

    // Bull Board's Clean all spares jobs younger than 5 s.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, job.timestamp + 5_500 - Date.now())));
    const manager = await signIn(await keyHolding(['operator.queues', 'operator.queues.manage']));
    expect((await cleanAllDelayed(manager)).status()).toBe(200);
    await manager.getByText(deliveryId).waitFor({ state: 'detached' });
    expect(await queue.getJob(job.id)).toBeNull();
  });
});
