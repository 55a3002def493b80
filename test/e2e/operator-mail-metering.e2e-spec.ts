import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { HeldSubmissionReleases } from '../../src/forms/instant/held-submission-releases';
import { startDnsServer, TestDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

interface Tenant {
  accountId: string;
  adminKey: string;
}

/**
 * Mail Mailroom sends on a tenant's behalf (D-37): instant-form confirmations and form notifications and
 * acknowledgments count against the tenant's email quota, confirmations are capped per hour and held to the
 * /instant/forms endpoint limit, acknowledgments go to one address once an hour, and notifications go out from
 * the tenant's own verified domain. Real PostgreSQL, Redis, SMTP and DNS; quotas and rate limits on.
 */
describe('operator mail metering', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let dns: TestDnsServer;
  const unique = () => randomBytes(5).toString('hex');
  const json = { Accept: 'application/json' };

  beforeAll(async () => {
    sink = await startSmtpSink();
    dns = await startDnsServer();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        FORMS_FROM: 'Mailroom Forms <forms@mailroom.test>',
        QUOTAS_ENABLED: 'true',
        RATE_LIMIT_ENABLED: 'true',
      },
    });
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await dns.close();
  });

  /** A new Free account (360 emails in its first month). */
  const tenant = (): Promise<Tenant> => createAccount(t, `Tenant ${unique()}`);

  const emailsUsed = async (who: Tenant): Promise<number> =>
    (await t.http.get('/settings').set(bearer(who.adminKey)).expect(200)).body.quotas.emails_per_month.used;
  const submissionsUsed = async (who: Tenant): Promise<number> =>
    (await t.http.get('/settings').set(bearer(who.adminKey)).expect(200)).body.quotas.form_submissions_per_hour.used;

  const instantForm = (who: Tenant, email: string) =>
    t.http.post('/instant/forms').set(bearer(who.adminKey)).send({ name: 'Landing', email });
  const instantBatch = (who: Tenant, emails: string[]) =>
    t.http
      .post('/instant/forms/batch')
      .set(bearer(who.adminKey))
      .send({ forms: emails.map((email, i) => ({ name: `Landing ${i}`, email })) });

  async function createForm(who: Tenant, settings: Record<string, unknown>): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(who.adminKey))
      .send({ name: 'Contact', rateLimit: 1000, ...settings });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const submit = (who: Tenant, formId: string, fields: Record<string, string>) =>
    t.http
      .post(`/f/${formId}`)
      .set(json)
      .set('X-Api-Key', who.adminKey)
      .send({ message: `m-${unique()}`, ...fields });

  const to = (address: string, marker?: string) => (mail: ReceivedMail) =>
    mail.envelope.rcptTo.includes(address) && (marker === undefined || (mail.parsed?.text ?? '').includes(marker));
  const limitHeaders = (res: Response) => ({
    limit: res.headers['x-ratelimit-limit'],
    remaining: res.headers['x-ratelimit-remaining'],
    scope: res.headers['x-ratelimit-scope'],
  });
  const linkIn = (mail: ReceivedMail) => /http:\/\/mailroom\.test(\/instant\/forms\/confirm\/[A-Za-z0-9_-]+)/.exec(mail.parsed!.text!)![1];
  const settle = () => new Promise((resolve) => setTimeout(resolve, 700));

  describe('instant forms', () => {
    it('counts every confirmation email against the account’s emails_per_month', async () => {
      const who = await tenant();
      expect(await emailsUsed(who)).toBe(0);
      const owner = `owner-${unique()}@example.org`;
      await instantForm(who, owner).expect(201);
      await sink.waitFor(to(owner));
      expect(await emailsUsed(who)).toBe(1);
      const batch = [1, 2, 3].map((i) => `batch-${i}-${unique()}@example.org`);
      await instantBatch(who, batch).expect(201);
      for (const address of batch) await sink.waitFor(to(address));
      expect(await emailsUsed(who)).toBe(4);
    });

    it('counts /instant/forms/batch and the form reads on the /instant/forms endpoint counter, not the confirmation link', async () => {
      const who = await tenant();
      const owner = `owner-${unique()}@example.org`;
      const single = await instantForm(who, owner).expect(201);
      expect(limitHeaders(single)).toEqual({ limit: '30', remaining: '29', scope: 'endpoint' });
      const batch = await instantBatch(who, [`b-${unique()}@example.org`]).expect(201);
      expect(limitHeaders(batch)).toEqual({ limit: '30', remaining: '28', scope: 'endpoint' });
      const read = await t.http.get(`/instant/forms/${single.body.id}/submissions`).set(bearer(who.adminKey)).expect(200);
      expect(limitHeaders(read)).toEqual({ limit: '30', remaining: '27', scope: 'endpoint' });
      // The page's POST comes from the recipient's browser: only its IP's limits hold it.
      const confirmed = await t.http.post(linkIn(await sink.waitFor(to(owner)))).expect(200);
      expect(confirmed.headers['x-ratelimit-scope']).toBe('ip');
      expect(confirmed.headers['x-ratelimit-limit']).toBe('60');
    });

    it('caps confirmation emails at 50 an hour per account, refusing a batch that would pass it whole', async () => {
      const who = await tenant();
      const first = Array.from({ length: 49 }, (_, i) => `cap-${i}-${unique()}@example.org`);
      await instantBatch(who, first).expect(201);
      const refusedBatch = [`over-a-${unique()}@example.org`, `over-b-${unique()}@example.org`];
      const refused = await instantBatch(who, refusedBatch).expect(429);
      expect(refused.body).toEqual({
        error: {
          code: 'RATE_LIMIT_EXCEEDED',
          message: expect.stringContaining('Confirmation emails: an account may send 50 an hour; 1 left, this request needs 2'),
          details: {
            limit: 50,
            remaining: 1,
            reset_time: expect.any(String),
            retry_after: expect.any(Number),
            scope: 'account',
            window: 'hour',
            requested: 2,
          },
        },
        documentation: 'http://mailroom.test/docs#errors',
      });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(refused.headers['retry-after']).toBe(String(refused.body.error.details.retry_after));
      expect(refused.headers['x-ratelimit-scope']).toBe('account');

      const last = `last-${unique()}@example.org`;
      await instantForm(who, last).expect(201);
      const over = await instantForm(who, `over-c-${unique()}@example.org`).expect(429);
      expect(over.body.error.details).toMatchObject({ limit: 50, remaining: 0, requested: 1 });

      // Nothing of the refused requests was stored, sent or counted.
      await sink.waitFor(to(last));
      await settle();
      for (const address of refusedBatch) expect(sink.messages.filter(to(address))).toEqual([]);
      expect(await emailsUsed(who)).toBe(50);
      const forms: { n: number }[] = await t.app
        .get(DataSource)
        .query(`SELECT count(*)::int AS n FROM forms WHERE account_id = $1 AND kind = 'instant'`, [who.accountId]);
      expect(forms[0].n).toBe(50);
    });

    it('meters held submissions’ emails when the confirmation releases them; what the quota has no room for goes once it has room', async () => {
      const who = await tenant();
      await t.http
        .patch(`/admin/accounts/${who.accountId}`)
        .set(bearer(t.operatorKey))
        .send({ tier: 'enterprise', quotas: { emails_per_month: 2 } })
        .expect(200);
      const owner = `held-${unique()}@example.org`;
      const form = await instantForm(who, owner).expect(201);
      const link = linkIn(await sink.waitFor(to(owner)));
      const markers = [unique(), unique()];
      for (const marker of markers) await submit(who, form.body.id, { message: marker }).expect(200);
      // Each submission counted when it arrived; nothing was emailed yet.
      expect([await emailsUsed(who), await submissionsUsed(who)]).toEqual([1, 2]);

      const page = await t.http.post(link).set('Accept', 'text/html').expect(200);
      expect(page.text).toContain('Form confirmed');
      expect(page.text).toContain('1 submission that was waiting is on the way.');
      expect(page.text).toMatch(
        /1 earlier submission waits for the sender’s email allowance: it will be sent once it has room again \(after \d{4}-\d\d-\d\d \d\d:\d\d UTC\)/,
      );
      await sink.waitFor(to(owner, markers[0]));
      expect(await emailsUsed(who)).toBe(2);
      const listed = await t.http.get(`/instant/forms/${form.body.id}/submissions`).set(bearer(who.adminKey)).expect(200);
      expect(listed.body.submissions.map((s: { status: string }) => s.status).sort()).toEqual(['accepted', 'held']);

      // Another click releases nothing; once the quota has room, the workers' sweep (every minute) sends the rest.
      const again = await t.http.post(link).set('Accept', 'text/html').expect(200);
      expect(again.text).toContain('Already confirmed');
      await settle();
      expect(sink.messages.filter(to(owner, markers[1]))).toEqual([]);
      await t.http
        .patch(`/admin/accounts/${who.accountId}`)
        .set(bearer(t.operatorKey))
        .send({ quotas: { emails_per_month: 10 } })
        .expect(200);
      await t.app.get(HeldSubmissionReleases).sweep();
      await sink.waitFor(to(owner, markers[1]));
      expect(await emailsUsed(who)).toBe(3);
      expect(sink.messages.filter(to(owner, markers[0]))).toHaveLength(1);
    });
  });

  describe('form submissions', () => {
    it('counts one submission and one email per recipient of the notification and the acknowledgment', async () => {
      const who = await tenant();
      const formId = await createForm(who, { to: ['sales@acme.example', 'owner@acme.example'], acknowledgment: { enabled: true } });
      const submitter = `ada-${unique()}@example.org`;
      const marker = unique();
      await submit(who, formId, { email: submitter, message: marker }).expect(200);
      await sink.waitFor(to('sales@acme.example', marker));
      await sink.waitFor(to(submitter));
      expect([await emailsUsed(who), await submissionsUsed(who)]).toEqual([3, 1]);
      // Spam counts nothing.
      await submit(who, formId, { email: submitter, _service_honeypot: 'http://spam.example' }).expect(200);
      expect([await emailsUsed(who), await submissionsUsed(who)]).toEqual([3, 1]);
    });

    it('acknowledges one submitter once an hour per form, and still notifies each time', async () => {
      const who = await tenant();
      const formId = await createForm(who, { to: 'inbox@acme.example', acknowledgment: { enabled: true, subject: 'Thanks!' } });
      const submitter = `bob-${unique()}@example.org`;
      const [first, second] = [unique(), unique()];
      await submit(who, formId, { email: submitter, message: first }).expect(200);
      await sink.waitFor(to(submitter));
      await submit(who, formId, { email: submitter.toUpperCase(), message: second }).expect(200);
      await sink.waitFor(to('inbox@acme.example', second));
      await settle();
      expect(sink.messages.filter(to('inbox@acme.example', first))).toHaveLength(1);
      const acknowledgments = sink.messages.filter((mail) => mail.parsed?.subject === 'Thanks!' && to(submitter)(mail));
      expect(acknowledgments).toHaveLength(1);
      expect(sink.messages.filter(to(submitter.toUpperCase()))).toEqual([]);
      // What was not sent was not counted: 2 notifications and 1 acknowledgment.
      expect(await emailsUsed(who)).toBe(3);
      // Another submitter, or the same one on another form, is acknowledged.
      const other = `cy-${unique()}@example.org`;
      await submit(who, formId, { email: other }).expect(200);
      await sink.waitFor(to(other));
      const otherForm = await createForm(who, { to: 'inbox@acme.example', acknowledgment: { enabled: true, subject: 'Other form' } });
      await submit(who, otherForm, { email: submitter }).expect(200);
      await sink.waitFor((mail) => mail.parsed?.subject === 'Other form' && to(submitter)(mail));
    });

    it('refuses a form post whose emails would pass a Free account’s quota with 429, the form’s own message kept', async () => {
      const who = await tenant();
      const formId = await createForm(who, {
        to: ['a@acme.example', 'b@acme.example'],
        rate_limiting: { messages: { global_limited: 'We cannot take messages right now.' } },
      });
      await t.http.post('/api/billing/usage').set(bearer(who.adminKey)).send({ tenantId: who.accountId, emailCount: 359 }).expect(200);
      const marker = unique();
      const refused = await submit(who, formId, { message: marker }).expect(429);
      expect(refused.body.error).toEqual({
        code: 'QUOTA_EXCEEDED',
        message: 'We cannot take messages right now.',
        details: expect.objectContaining({ quota: 'emails_per_month', limit: 360, remaining: 1, requested: 2, scope: 'account' }),
      });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Nothing accepted is lost: nothing was stored, sent or counted.
      const stored = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(who.adminKey)).expect(200);
      expect(stored.body.total).toBe(0);
      expect([await emailsUsed(who), await submissionsUsed(who)]).toEqual([359, 0]);
      await settle();
      expect(sink.messages.filter(to('a@acme.example', marker))).toEqual([]);
    });
  });

  describe('sender', () => {
    it('sends a form’s notification from the account’s verified domain, DKIM-signed for it, Reply-To the submitter', async () => {
      const who = await tenant();
      const domain = `m${unique()}.metering.test`;
      await createVerifiedDomain(t, who.accountId, domain, dns);
      // Verified later (and first by name): the first verified domain stays the sender.
      await new Promise((resolve) => setTimeout(resolve, 20));
      await createVerifiedDomain(t, who.accountId, `a${unique()}.metering.test`, dns);
      const formId = await createForm(who, { to: 'owner@acme.example', acknowledgment: { enabled: true } });
      const submitter = `dee-${unique()}@example.org`;
      const marker = unique();
      await submit(who, formId, { email: submitter, message: marker }).expect(200);

      const notification = await sink.waitFor(to('owner@acme.example', marker));
      expect(notification.parsed!.from!.value[0].address).toBe(`forms@${domain}`);
      expect(notification.parsed!.replyTo!.value[0].address).toBe(submitter);
      const dkim = await dns.dkimResults(notification.raw, `forms@${domain}`);
      expect(dkim).toHaveLength(1);
      expect(dkim[0]).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
      const acknowledgment = await sink.waitFor(to(submitter));
      expect(acknowledgment.parsed!.from!.value[0].address).toBe(`forms@${domain}`);

      // A form under a domain that is not verified yet sends from the verified one too.
      const pending = `p${unique()}.metering.test`;
      await t.http.post('/domains').set(bearer(who.adminKey)).send({ domain: pending }).expect(201);
      await t.http
        .put(`/domains/${pending}`)
        .set(bearer(who.adminKey))
        .send({ forms: { quote: { to: 'quotes@acme.example' } } })
        .expect(200);
      const [{ id: pendingFormId }] = await t.app
        .get(DataSource)
        .query(`SELECT f.id FROM forms f JOIN domains d ON d.id = f.domain_id WHERE d.name = $1 AND f.slug = 'quote'`, [pending]);
      const quoted = unique();
      await submit(who, pendingFormId, { message: quoted }).expect(200);
      const quote = await sink.waitFor(to('quotes@acme.example', quoted));
      expect(quote.parsed!.from!.value[0].address).toBe(`forms@${domain}`);
    });

    it('sends from FORMS_FROM for an account without a verified domain', async () => {
      const who = await tenant();
      const formId = await createForm(who, { to: 'owner@acme.example' });
      const submitter = `eve-${unique()}@example.org`;
      const marker = unique();
      await submit(who, formId, { email: submitter, message: marker }).expect(200);
      const mail = await sink.waitFor(to('owner@acme.example', marker));
      expect(mail.parsed!.from!.value[0]).toEqual({ name: 'Mailroom Forms', address: 'forms@mailroom.test' });
      expect(mail.parsed!.replyTo!.value[0].address).toBe(submitter);
    });
  });
});
