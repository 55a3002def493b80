import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { AccountUsageRepository } from '../../src/quotas/account-usage.repository';
import { QuotaService } from '../../src/quotas/quota.service';
import { QuotaStore } from '../../src/quotas/quota.store';
import { RedisService } from '../../src/redis/redis.service';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

interface Tenant {
  accountId: string;
  adminKey: string;
  domain: string;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * The quotas of D-13 against real PostgreSQL, Redis and SMTP: every quota stops at exactly its limit, a refused
 * acceptance leaves nothing behind (no message, no usage, no email), the counters survive losing Redis's keys
 * or Redis itself, and concurrent sends are counted exactly.
 */
describe('quotas', () => {
  let t: TestApp;
  let sink: SmtpSink;
  const unique = () => randomBytes(5).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { QUOTAS_ENABLED: 'true', SMTP_URL: sink.url } });
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const db = () => t.app.get(DataSource);
  const nextMonth = () => {
    const now = new Date();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
  };

  /** An account with a verified domain; tier, quotas and limits set by the operator's PATCH. */
  async function tenant(changes: Record<string, unknown> = {}): Promise<Tenant> {
    const { accountId, adminKey } = await createAccount(t, `Quota ${unique()}`);
    const domain = `q${unique()}.quota.test`;
    await createVerifiedDomain(t, accountId, domain);
    if (Object.keys(changes).length)
      await t.http.patch(`/admin/accounts/${accountId}`).set(bearer(t.operatorKey)).send(changes).expect(200);
    return { accountId, adminKey, domain };
  }

  const send = (who: Tenant, body: Record<string, unknown> = {}, app = t) =>
    app.http
      .post('/email/send')
      .set(bearer(who.adminKey))
      .send({ from: `hello@${who.domain}`, to: 'ada@example.org', subject: `s-${unique()}`, text: 'Hello', ...body });

  const recipients = (n: number) => Array.from({ length: n }, (_, i) => `r${i}-${unique()}@example.org`);

  async function messages(accountId: string, subject?: string): Promise<number> {
    const rows: { n: number }[] = await db().query(
      'SELECT count(*)::int AS n FROM messages WHERE account_id = $1 AND ($2::text IS NULL OR subject = $2)',
      [accountId, subject ?? null],
    );
    return rows[0].n;
  }

  /** account_usage_hourly of the account this month. */
  async function usage(accountId: string): Promise<{ emails: number; submissions: number }> {
    const rows: { emails: string; submissions: string }[] = await db().query(
      `SELECT COALESCE(sum(emails), 0) AS emails, COALESCE(sum(submissions), 0) AS submissions FROM account_usage_hourly
        WHERE account_id = $1 AND hour >= date_trunc('month', now(), 'UTC')`,
      [accountId],
    );
    return { emails: Number(rows[0].emails), submissions: Number(rows[0].submissions) };
  }

  /** Usage that happened elsewhere this hour (POST /api/billing/usage records it through the same call). */
  const recordEmails = (accountId: string, emails: number) =>
    t.app.get(QuotaService).recordReported(accountId, emails, () => t.app.get(AccountUsageRepository).addEmails(accountId, emails));

  async function recordSubmissions(accountId: string, submissions: number): Promise<void> {
    await db().query(
      `INSERT INTO account_usage_hourly (account_id, hour, emails, submissions) VALUES ($1, date_trunc('hour', now(), 'UTC'), 0, $2)
       ON CONFLICT (account_id, hour) DO UPDATE SET submissions = account_usage_hourly.submissions + excluded.submissions`,
      [accountId, submissions],
    );
  }

  function expectRefused(
    res: Response,
    code: string,
    details: { quota: string; limit: number; remaining: number; requested: number; reset?: string },
  ) {
    expect(res.status).toBe(429);
    expect(res.body).toEqual({
      error: {
        code,
        message: expect.stringContaining(`${details.remaining} left, this request needs ${details.requested}`),
        details: {
          limit: details.limit,
          remaining: details.remaining,
          reset_time: details.reset ?? expect.stringMatching(ISO),
          retry_after: expect.any(Number),
          scope: 'account',
          quota: details.quota,
          window: expect.stringMatching(/^(hour|day|month)$/),
          requested: details.requested,
        },
      },
      documentation: 'http://mailroom.test/docs#errors',
    });
    const retryAfter = res.body.error.details.retry_after as number;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(Date.parse(res.body.error.details.reset_time) - Date.now()).toBeLessThanOrEqual(retryAfter * 1000 + 1000);
    expect(res.headers['retry-after']).toBe(String(retryAfter));
    expect(res.headers['x-ratelimit-retryafter']).toBe(String(retryAfter));
  }

  const mailWithSubject = (subject: string) => (mail: ReceivedMail) => mail.parsed?.subject === subject;

  async function expectNeverDelivered(subject: string): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(sink.messages.filter(mailWithSubject(subject))).toEqual([]);
  }

  async function createForm(who: Tenant, settings: Record<string, unknown> = {}): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(who.adminKey))
      .send({ name: 'Contact', to: 'owner@acme.example', ...settings });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const submit = (who: Tenant, formId: string, fields: Record<string, string> = {}) =>
    t.http
      .post(`/f/${formId}`)
      .set(bearer(who.adminKey))
      .set('Accept', 'application/json')
      .send({ message: `m-${unique()}`, ...fields });

  async function submissions(formId: string, status = 'accepted'): Promise<number> {
    const rows: { n: number }[] = await db().query('SELECT count(*)::int AS n FROM form_submissions WHERE form_id = $1 AND status = $2', [
      formId,
      status,
    ]);
    return rows[0].n;
  }

  const settingsOf = async (who: Tenant) => (await t.http.get('/settings').set(bearer(who.adminKey)).expect(200)).body;

  describe('emails per month (Free)', () => {
    it('accepts up to 360 in the first month and refuses the rest whole: a 3-recipient send with 2 left stores, queues and delivers nothing', async () => {
      const who = await tenant();
      await recordEmails(who.accountId, 356);
      await send(who, { to: recipients(2) }).expect(200);

      const tooMany = `too-many-${unique()}`;
      expectRefused(await send(who, { to: recipients(3), subject: tooMany }), 'QUOTA_EXCEEDED', {
        quota: 'emails_per_month',
        limit: 360,
        remaining: 2,
        requested: 3,
        reset: nextMonth(),
      });
      expect(await messages(who.accountId, tooMany)).toBe(0);
      expect(await usage(who.accountId)).toEqual({ emails: 358, submissions: 0 });

      const last = `last-${unique()}`;
      const accepted = await send(who, { to: recipients(2), subject: last }).expect(200);
      expect(accepted.body).toMatchObject({ success: true, messageId: expect.stringMatching(/^msg_/) });
      await sink.waitFor(mailWithSubject(last));

      const first = `first-refused-${unique()}`;
      expectRefused(await send(who, { subject: first }), 'QUOTA_EXCEEDED', {
        quota: 'emails_per_month',
        limit: 360,
        remaining: 0,
        requested: 1,
      });
      expect(await messages(who.accountId, first)).toBe(0);
      expect(await messages(who.accountId)).toBe(2);
      expect(await usage(who.accountId)).toEqual({ emails: 360, submissions: 0 });
      await expectNeverDelivered(first);
      await expectNeverDelivered(tooMany);
    });

    it('gives an account created in an earlier month 180', async () => {
      const who = await tenant();
      await db().query(`UPDATE accounts SET created_at = created_at - interval '1 month' WHERE id = $1`, [who.accountId]);
      await recordEmails(who.accountId, 179);
      await send(who).expect(200);
      expectRefused(await send(who), 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 180, remaining: 0, requested: 1 });
      expect(await usage(who.accountId)).toEqual({ emails: 180, submissions: 0 });
      expect((await settingsOf(who)).quotas.emails_per_month).toEqual({ limit: 180, used: 180, remaining: 0, reset_time: nextMonth() });
    });

    it('lets Pro go into overage: no stop past any included amount', async () => {
      const who = await tenant({ tier: 'pro' });
      await recordEmails(who.accountId, 250_000);
      await send(who, { to: recipients(3) }).expect(200);
      expect(await usage(who.accountId)).toEqual({ emails: 250_003, submissions: 0 });
      expect((await settingsOf(who)).quotas.emails_per_month).toEqual({
        limit: null,
        used: 250_003,
        remaining: null,
        reset_time: nextMonth(),
      });
    });

    it('refuses a batch whole when it does not fit, and accepts one that does', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 5 } });
      const batch = (n: number, subject: string) =>
        t.http
          .post('/email/batch')
          .set(bearer(who.adminKey))
          .send({ from: `hello@${who.domain}`, subject, text: 'Hi {{name}}', recipients: recipients(n).map((email) => ({ email })) });
      const refused = `batch-${unique()}`;
      expectRefused(await batch(6, refused), 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 5, remaining: 5, requested: 6 });
      expect(await messages(who.accountId)).toBe(0);
      const res = await batch(5, `batch-${unique()}`).expect(200);
      expect(res.body.data).toHaveLength(5);
      expect(await messages(who.accountId)).toBe(5);
      expect(await usage(who.accountId)).toEqual({ emails: 5, submissions: 0 });
      await expectNeverDelivered(refused);
    });

    it('refuses a list send whole when its subscribers do not fit, and counts them all at acceptance when they do', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 3 } });
      const template = `news-${unique()}`;
      await t.http
        .post('/email/templates')
        .set(bearer(who.adminKey))
        .send({ name: template, subject: 'News', text: 'Hello {{name}}' })
        .expect(201);
      const listId = (
        await t.http
          .post('/email/lists')
          .set(bearer(who.adminKey))
          .send({ name: `list ${unique()}` })
          .expect(201)
      ).body.id;
      await t.http
        .post(`/email/lists/${listId}/subscribers`)
        .set(bearer(who.adminKey))
        .send(recipients(4).map((email) => ({ email })))
        .expect(200);
      const listSend = () => send(who, { to: undefined, subject: undefined, text: undefined, list: listId, template });

      expectRefused(await listSend(), 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 3, remaining: 3, requested: 4 });
      const sends: { n: number }[] = await db().query('SELECT count(*)::int AS n FROM list_sends WHERE account_id = $1', [who.accountId]);
      expect(sends[0].n).toBe(0);
      expect(await usage(who.accountId)).toEqual({ emails: 0, submissions: 0 });

      // The operator raises the quota: it applies to the very next send.
      await t.http
        .patch(`/admin/accounts/${who.accountId}`)
        .set(bearer(t.operatorKey))
        .send({ quotas: { emails_per_month: 4 } })
        .expect(200);
      const accepted = await listSend().expect(200);
      expect(accepted.body).toMatchObject({ status: 'queued', queued: 4 });
      expect(await usage(who.accountId)).toEqual({ emails: 4, submissions: 0 });
      // The fan-out's pages are not metered again.
      await waitFor(
        'the list send to be made',
        () => messages(who.accountId),
        (n) => n === 4,
      );
      expect(await usage(who.accountId)).toEqual({ emails: 4, submissions: 0 });
      expectRefused(await send(who), 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 4, remaining: 0, requested: 1 });
    });
  });

  describe('form submissions', () => {
    it('stops at the enterprise quota per hour; spam is stored but not counted', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { form_submissions_per_hour: 2 } });
      const formId = await createForm(who);
      await submit(who, formId).expect(200);
      // A honeypot post is answered like a success, stored as spam, and costs nothing.
      await submit(who, formId, { _service_honeypot: 'http://spam.example' }).expect(200);
      expect(await submissions(formId, 'spam')).toBe(1);
      await submit(who, formId).expect(200);
      expectRefused(await submit(who, formId), 'QUOTA_EXCEEDED', {
        quota: 'form_submissions_per_hour',
        limit: 2,
        remaining: 0,
        requested: 1,
      });
      expect(await submissions(formId)).toBe(2);
      // Each accepted submission also counts its notification as an email (D-37).
      expect(await usage(who.accountId)).toEqual({ emails: 2, submissions: 2 });
      // Sends are not held to the submission quota.
      await send(who).expect(200);
    });

    it('applies the tiers: Free 100 an hour, Pro 2000 an hour and 20000 a day', async () => {
      const free = await tenant();
      const freeForm = await createForm(free);
      await recordSubmissions(free.accountId, 99);
      await submit(free, freeForm).expect(200);
      expectRefused(await submit(free, freeForm), 'QUOTA_EXCEEDED', {
        quota: 'form_submissions_per_hour',
        limit: 100,
        remaining: 0,
        requested: 1,
      });

      const pro = await tenant({ tier: 'pro' });
      const proForm = await createForm(pro);
      await recordSubmissions(pro.accountId, 1999);
      await submit(pro, proForm).expect(200);
      expectRefused(await submit(pro, proForm), 'QUOTA_EXCEEDED', {
        quota: 'form_submissions_per_hour',
        limit: 2000,
        remaining: 0,
        requested: 1,
      });
      const quotas = (await settingsOf(pro)).quotas;
      expect(quotas.form_submissions_per_hour).toMatchObject({ limit: 2000, used: 2000, remaining: 0 });
      expect(quotas.form_submissions_per_day).toMatchObject({ limit: 20_000, used: 2000, remaining: 18_000 });
    });

    it('answers a refused browser post with the form’s global_limited text', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { form_submissions_per_hour: 1 } });
      const formId = await createForm(who, {
        rate_limiting: { messages: { global_limited: 'We are receiving too many messages, please try again later.' } },
      });
      await submit(who, formId).expect(200);
      const res = await t.http
        .post(`/f/${formId}`)
        .set(bearer(who.adminKey))
        .set('Accept', 'text/html')
        .type('form')
        .send({ message: 'hello' });
      // A browser's navigation gets a page saying the form's text; a script the error body with it.
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('We are receiving too many messages, please try again later.');
      expect(res.text).toContain('QUOTA_EXCEEDED');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const script = await t.http
        .post(`/f/${formId}`)
        .set(bearer(who.adminKey))
        .set('Accept', 'application/json')
        .send({ message: 'hello' });
      expect(script.status).toBe(429);
      expect(script.body.error).toMatchObject({
        code: 'QUOTA_EXCEEDED',
        message: 'We are receiving too many messages, please try again later.',
        details: { quota: 'form_submissions_per_hour', limit: 1, remaining: 0 },
      });
    });
  });

  describe('global_limits', () => {
    it('caps emails and form submissions together per hour, day and month (ACCOUNT_QUOTA_EXCEEDED)', async () => {
      const who = await tenant({ tier: 'enterprise' });
      const formId = await createForm(who);
      const limits = (global_limits: Record<string, number | null>) =>
        t.http.patch('/settings').set(bearer(who.adminKey)).send({ global_limits }).expect(200);

      // A form post costs 2 units: its submission and its notification's one recipient.
      await limits({ hourly: 4 });
      await send(who, { to: recipients(2) }).expect(200);
      await submit(who, formId).expect(200);
      expectRefused(await send(who), 'ACCOUNT_QUOTA_EXCEEDED', { quota: 'global_hourly', limit: 4, remaining: 0, requested: 1 });
      expectRefused(await submit(who, formId), 'ACCOUNT_QUOTA_EXCEEDED', { quota: 'global_hourly', limit: 4, remaining: 0, requested: 2 });

      await limits({ hourly: null, daily: 6 });
      await send(who, { to: recipients(2) }).expect(200);
      expectRefused(await send(who), 'ACCOUNT_QUOTA_EXCEEDED', { quota: 'global_daily', limit: 6, remaining: 0, requested: 1 });

      await limits({ daily: null, monthly: 9 });
      await submit(who, formId).expect(200);
      expectRefused(await send(who, { to: recipients(2) }), 'ACCOUNT_QUOTA_EXCEEDED', {
        quota: 'global_monthly',
        limit: 9,
        remaining: 1,
        requested: 2,
      });
      await send(who).expect(200);
      expectRefused(await submit(who, formId), 'ACCOUNT_QUOTA_EXCEEDED', { quota: 'global_monthly', limit: 9, remaining: 0, requested: 2 });

      await limits({ monthly: null });
      await send(who).expect(200);
      expect(await usage(who.accountId)).toEqual({ emails: 8, submissions: 2 });
      expect((await settingsOf(who)).global_limits).toEqual({ hourly: null, daily: null, monthly: null });
    });

    it('reports the quota that keeps the caller waiting longest when several refuse', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 2 } });
      await t.http
        .patch('/settings')
        .set(bearer(who.adminKey))
        .send({ global_limits: { hourly: 2 } })
        .expect(200);
      await send(who, { to: recipients(2) }).expect(200);
      const res = await send(who);
      expectRefused(res, 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 2, remaining: 0, requested: 1, reset: nextMonth() });
    });
  });

  describe('settings', () => {
    it('shows the account’s global_limits and every quota with its usage, and changes them field by field', async () => {
      const who = await tenant();
      await recordEmails(who.accountId, 10);
      const now = new Date();
      const hourEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), now.getUTCHours() + 1)).toISOString();
      const dayEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
      const standing = (limit: number | null, used: number, reset_time: string) => ({
        limit,
        used,
        remaining: limit === null ? null : limit - used,
        reset_time,
      });
      expect(await settingsOf(who)).toEqual({
        tier: 'free',
        quotas_enforced: true,
        global_limits: { hourly: null, daily: null, monthly: null },
        quotas: {
          emails_per_month: standing(360, 10, nextMonth()),
          forwards_per_month: standing(500, 0, nextMonth()),
          form_submissions_per_hour: standing(100, 0, hourEnd),
          form_submissions_per_day: standing(1000, 0, dayEnd),
          global_hourly: standing(null, 10, hourEnd),
          global_daily: standing(null, 10, dayEnd),
          global_monthly: standing(null, 10, nextMonth()),
        },
        retention: { message_content_days: 30, inbound_messages_days: 7, outbox_events_days: 7, webhook_deliveries_days: 30 },
      });

      const patched = await t.http
        .patch('/settings')
        .set(bearer(who.adminKey))
        .send({ global_limits: { hourly: 50, monthly: 1000 } })
        .expect(200);
      expect(patched.body.global_limits).toEqual({ hourly: 50, daily: null, monthly: 1000 });
      expect(patched.body.quotas.global_hourly).toEqual(standing(50, 10, hourEnd));
      const daily = await t.http
        .patch('/settings')
        .set(bearer(who.adminKey))
        .send({ global_limits: { daily: 200, hourly: null } })
        .expect(200);
      expect(daily.body.global_limits).toEqual({ hourly: null, daily: 200, monthly: 1000 });
      await t.http.patch('/settings').set(bearer(who.adminKey)).send({}).expect(200);
      expect((await settingsOf(who)).global_limits).toEqual({ hourly: null, daily: 200, monthly: 1000 });
      const stored: { settings: Record<string, unknown> }[] = await db().query('SELECT settings FROM accounts WHERE id = $1', [
        who.accountId,
      ]);
      expect(stored[0].settings).toEqual({ global_limits: { daily: 200, monthly: 1000 } });
      await t.http.patch('/settings').set(bearer(who.adminKey)).send({ global_limits: null }).expect(200);
      expect((await db().query('SELECT settings FROM accounts WHERE id = $1', [who.accountId]))[0].settings).toEqual({});
    });

    it('refuses limits that are not positive integers, unknown fields, and keys without the right', async () => {
      const who = await tenant();
      const patch = (body: unknown, key = who.adminKey) =>
        t.http
          .patch('/settings')
          .set(bearer(key))
          .send(body as object);
      const fieldsOf = (res: Response) => res.body.error.details.fields.map((f: { field: string }) => f.field);
      for (const [body, field] of [
        [{ global_limits: { hourly: 0 } }, 'global_limits.hourly'],
        [{ global_limits: { daily: 1.5 } }, 'global_limits.daily'],
        [{ global_limits: { monthly: '100' } }, 'global_limits.monthly'],
        [{ global_limits: { hourly: 1_000_000_001 } }, 'global_limits.hourly'],
        [{ global_limits: { weekly: 3 } }, 'global_limits.weekly'],
        [{ global_limits: 5 }, 'global_limits'],
        [{ quotas: { emails_per_month: 1_000_000 } }, 'quotas'],
      ] as const) {
        const res = await patch(body);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        expect(fieldsOf(res)).toContain(field);
      }
      expect((await settingsOf(who)).global_limits).toEqual({ hourly: null, daily: null, monthly: null });

      const usage = await createKey(t, who.adminKey, { keyType: 'usage' });
      expect((await t.http.get('/settings').set(bearer(usage.key))).status).toBe(403);
      expect((await patch({ global_limits: { hourly: 5 } }, usage.key)).status).toBe(403);
      const narrow = await createKey(t, who.adminKey, { keyType: 'admin', permissions: ['email.send'] });
      await t.http.get('/settings').set(bearer(narrow.key)).expect(200);
      expect((await patch({ global_limits: { hourly: 5 } }, narrow.key)).status).toBe(403);
    });
  });

  describe('operator PATCH /admin/accounts/{accountId}', () => {
    it('sets tier, limits and quotas field by field; only the operator may', async () => {
      const who = await tenant();
      const res = await t.http
        .patch(`/admin/accounts/${who.accountId}`)
        .set(bearer(t.operatorKey))
        .send({
          tier: 'enterprise',
          limits: { requests_per_hour: 5000, burst: 50 },
          quotas: { emails_per_month: 100, form_submissions_per_day: 9 },
        })
        .expect(200);
      expect(res.body).toEqual({
        id: who.accountId,
        name: expect.any(String),
        tier: 'enterprise',
        isOperator: false,
        createdAt: expect.stringMatching(ISO),
        limits: { requests_per_hour: 5000, burst: 50 },
        quotas: { emails_per_month: 100, form_submissions_per_day: 9 },
        global_limits: {},
        billingSelfService: false,
      });
      // Keys carry the tier: the account's keys see it at once, and the limiter its limits.
      expect((await t.http.get('/auth/whoami').set(bearer(who.adminKey)).expect(200)).body.plan).toBe('enterprise');
      expect((await t.http.get('/rate-limits/status').set(bearer(who.adminKey)).expect(200)).body.plan_limits).toEqual({
        requests_per_hour: 5000,
        burst: 50,
      });
      expect((await settingsOf(who)).quotas.emails_per_month.limit).toBe(100);

      const changed = await t.http
        .patch(`/admin/accounts/${who.accountId}`)
        .set(bearer(t.operatorKey))
        .send({ limits: { burst: null }, quotas: null })
        .expect(200);
      expect(changed.body).toMatchObject({ tier: 'enterprise', limits: { requests_per_hour: 5000 }, quotas: {} });
      expect((await settingsOf(who)).quotas.emails_per_month.limit).toBeNull();

      expect((await t.http.patch(`/admin/accounts/${who.accountId}`).set(bearer(who.adminKey)).send({ tier: 'pro' })).status).toBe(403);
      const unknown = await t.http.patch('/admin/accounts/acc_unknown').set(bearer(t.operatorKey)).send({ tier: 'pro' });
      expect(unknown.status).toBe(404);
      const bad = await t.http
        .patch(`/admin/accounts/${who.accountId}`)
        .set(bearer(t.operatorKey))
        .send({ tier: 'gold', quotas: { emails_per_month: -1 } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['quotas.emails_per_month', 'tier']);
      expect((await settingsOf(who)).tier).toBe('enterprise');
    });
  });

  describe('counters', () => {
    it('reloads lost Redis counters from PostgreSQL and stays exact', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 10 } });
      await t.http
        .patch('/settings')
        .set(bearer(who.adminKey))
        .send({ global_limits: { daily: 10 } })
        .expect(200);
      const redis = t.app.get(RedisService);
      const counters = async () => (await redis.client.keys(redis.key('quota', who.accountId, '*'))).sort();

      await send(who, { to: recipients(3) }).expect(200);
      expect(await counters()).toHaveLength(2); // emails this month, units today
      await redis.client.del(...(await counters()));
      await send(who, { to: recipients(2) }).expect(200);
      // Reported usage is added to the counters that exist…
      await recordEmails(who.accountId, 2);
      expect(await Promise.all((await counters()).map((key) => redis.client.get(key)))).toEqual(['7', '7']);
      // …and while they are gone it is in the rows, so in the counters once they load.
      await redis.client.del(...(await counters()));
      await recordEmails(who.accountId, 2);
      expect(await counters()).toEqual([]);
      await send(who).expect(200);
      expectRefused(await send(who), 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 10, remaining: 0, requested: 1 });
      const values = await Promise.all((await counters()).map((key) => redis.client.get(key)));
      expect(values).toEqual(['10', '10']);
      expect(await usage(who.accountId)).toEqual({ emails: 10, submissions: 0 });
    });

    it('keeps checking against PostgreSQL while Redis is unreachable, and counts exactly when it is back', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 6 } });
      const connection = t.app.get(QuotaStore).connection;
      await send(who, { to: recipients(2) }).expect(200);
      connection.disconnect();
      try {
        await send(who, { to: recipients(2) }).expect(200);
        const statuses = (await Promise.all(Array.from({ length: 20 }, () => send(who)))).map((r) => r.status);
        expect(statuses.filter((s) => s === 200)).toHaveLength(2);
        expect(statuses.filter((s) => s === 429)).toHaveLength(18);
        expect(await usage(who.accountId)).toEqual({ emails: 6, submissions: 0 });
      } finally {
        await connection.connect();
      }
      // The counter missed what was accepted meanwhile: it is dropped and loaded again.
      await waitFor(
        'the quota connection',
        () => connection.status,
        (status) => status === 'ready',
      );
      expectRefused(await send(who), 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 6, remaining: 0, requested: 1 });
      const redis = t.app.get(RedisService);
      const counter = redis.key('quota', who.accountId, 'emails', `m${new Date().toISOString().slice(0, 7).replace('-', '')}`);
      expect(await redis.client.get(t.app.get(QuotaStore).runKey(counter))).toBe('6');
      expect(await messages(who.accountId)).toBe(4);
    });

    it('counts 200 concurrent sends exactly', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 1_000_000 } });
      await t.http
        .patch('/settings')
        .set(bearer(who.adminKey))
        .send({ global_limits: { hourly: 1_000_000 } })
        .expect(200);
      // Scheduled a day ahead: accepted and metered now, not delivered during the test.
      const scheduleFor = new Date(Date.now() + 86_400_000).toISOString();
      const results = await Promise.all(Array.from({ length: 200 }, () => send(who, { scheduleFor })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(200);
      expect(await usage(who.accountId)).toEqual({ emails: 200, submissions: 0 });
      const { quotas } = await settingsOf(who);
      expect(quotas.emails_per_month).toMatchObject({ limit: 1_000_000, used: 200, remaining: 999_800 });
      expect(quotas.global_hourly).toMatchObject({ limit: 1_000_000, used: 200 });
    });

    it('accepts exactly 150 of 200 concurrent sends against a quota of 150', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 150 } });
      const scheduleFor = new Date(Date.now() + 86_400_000).toISOString();
      const results = await Promise.all(Array.from({ length: 200 }, () => send(who, { scheduleFor })));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(150);
      expect(statuses.filter((s) => s === 429)).toHaveLength(50);
      expect(await messages(who.accountId)).toBe(150);
      expect(await usage(who.accountId)).toEqual({ emails: 150, submissions: 0 });
    });

    it('loads a vanished counter only after the acceptances under way have committed', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 100 } });
      const quotas = t.app.get(QuotaService);
      const redis = t.app.get(RedisService);
      const underWay = await quotas.reserve({ accountId: who.accountId, emails: 3, submissions: 0 });
      // Under the Redis server's run, which the store knows once it has called Redis.
      const counter = t.app
        .get(QuotaStore)
        .runKey(redis.key('quota', who.accountId, 'emails', `m${new Date().toISOString().slice(0, 7).replace('-', '')}`));
      expect(await redis.client.get(counter)).toBe('3');
      await redis.client.del(counter);

      let second = false;
      const next = quotas.reserve({ accountId: who.accountId, emails: 2, submissions: 0 }).then((r) => ((second = true), r));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(second).toBe(false); // waiting for the first to commit or fail
      // The first commits: its row is written (as the group commit does), then it says so.
      await db().query(
        `INSERT INTO account_usage_hourly (account_id, hour, emails, submissions) VALUES ($1, date_trunc('hour', now(), 'UTC'), 3, 0)`,
        [who.accountId],
      );
      underWay.committed();
      (await next).committed();
      expect(await redis.client.get(counter)).toBe('5');

      // A failed one gives back what it took before a waiting load reads the rows.
      const failing = await quotas.reserve({ accountId: who.accountId, emails: 4, submissions: 0 });
      expect(await redis.client.get(counter)).toBe('9');
      await failing.release();
      expect(await redis.client.get(counter)).toBe('5');
    });

    it('stays exact when its counters vanish while concurrent sends are under way', async () => {
      const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 150 } });
      const redis = t.app.get(RedisService);
      const scheduleFor = new Date(Date.now() + 86_400_000).toISOString();
      let sending = true;
      let drops = 0;
      const dropping = (async () => {
        while (sending) {
          const keys = await redis.client.keys(redis.key('quota', who.accountId, '*'));
          if (keys.length) drops += await redis.client.del(...keys);
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      })();
      const results = await Promise.all(Array.from({ length: 200 }, () => send(who, { scheduleFor })));
      sending = false;
      await dropping;
      expect(drops).toBeGreaterThan(2);
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(150);
      expect(statuses.filter((s) => s === 429)).toHaveLength(50);
      expect(await usage(who.accountId)).toEqual({ emails: 150, submissions: 0 });
    });
  });

  describe('QUOTAS_ENABLED=false', () => {
    it('stops nothing, and still records usage', async () => {
      const off = await createTestApp({ shareWith: t, env: { QUOTAS_ENABLED: 'false' } });
      try {
        const who = await tenant();
        await recordEmails(who.accountId, 360);
        expectRefused(await send(who), 'QUOTA_EXCEEDED', { quota: 'emails_per_month', limit: 360, remaining: 0, requested: 1 });
        await send(who, { to: recipients(3) }, off).expect(200);
        expect(await usage(who.accountId)).toEqual({ emails: 363, submissions: 0 });
        expect((await off.http.get('/settings').set(bearer(who.adminKey)).expect(200)).body).toMatchObject({
          quotas_enforced: false,
          quotas: { emails_per_month: { limit: 360, used: 363, remaining: 0 } },
        });
      } finally {
        await off.close();
      }
    });
  });
});
