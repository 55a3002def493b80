import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { RetentionSweeper } from '../../src/retention/retention.sweeper';
import { WebhookDisabledNotices } from '../../src/webhooks/webhook-disabled-notices';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForValue } from '../support/wait-for';
import { webhookApi } from '../support/webhook-api';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const FAILING_SPAN_MS = 4000;
const MAX_PAYLOAD_BYTES = 4096;

/**
 * A webhook's life beyond single deliveries: disabled on 410 Gone and after a span of only failures (a
 * `webhook.disabled` event to the account's other webhooks, an email to its billing contact), enabled again through
 * the API; events too large sent thin with the URL of the whole event; failed deliveries recovered since a time.
 * Real HTTP receivers, PostgreSQL, Redis and an SMTP sink.
 */
describe('webhook lifecycle', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let receiver: WebhookReceiver<Record<string, unknown>>;
  let base: string;
  const unique = () => randomBytes(4).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    receiver = await startWebhookReceiver();
    base = receiver.base;
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_RETRY_SCHEDULE: '100ms',
        WEBHOOK_DISABLE_AFTER_FAILING_MS: String(FAILING_SPAN_MS),
        WEBHOOK_MAX_PAYLOAD_BYTES: String(MAX_PAYLOAD_BYTES),
      },
    });
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await receiver.close();
  });

  /** An account with a verified domain to send from, and a billing customer whose email is its contact. */
  async function tenant(): Promise<{ accountId: string; adminKey: string; domain: string; contact: string }> {
    const owner = await createAccount(t, `Hooks ${unique()}`);
    const domain = `${unique()}.lifecycle.test`;
    await createVerifiedDomain(t, owner.accountId, domain);
    const contact = `ops-${unique()}@acme.example`;
    await t.http
      .post('/api/billing/customer')
      .set(bearer(owner.adminKey))
      .send({ tenantId: owner.accountId, email: contact, name: 'Acme' })
      .expect(201);
    return { ...owner, domain, contact };
  }

  const { register, send, webhookOf, deliveriesOf } = webhookApi(() => t);
  const hooksAt = (path: string) => receiver.received.filter((hook) => hook.path === path);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  describe('disabling', () => {
    it('disables a webhook answering 410 Gone after one attempt, tells the subscribed webhooks and emails the contact', async () => {
      const owner = await tenant();
      const goneUrlPath = `/gone-${unique()}`;
      // The receiver tells requests apart by path and query.
      const gonePath = `${goneUrlPath}?token=s3cret`;
      const watcherPath = `/watcher-${unique()}`;
      const otherPath = `/other-${unique()}`;
      receiver.answers.set(gonePath, 410);
      // Subscribed to webhook.disabled too: it still never gets the event of its own disable.
      const gone = await register(owner.adminKey, { url: `${base}${gonePath}`, events: ['sent', 'webhook.disabled'] });
      const watcher = await register(owner.adminKey, { url: `${base}${watcherPath}`, events: ['webhook.disabled'] });
      await register(owner.adminKey, { url: `${base}${otherPath}`, events: ['sent'] });

      const messageId = await send(owner);
      const disabled = await waitForValue('the webhook to be disabled', async () => {
        const webhook = await webhookOf(owner.adminKey, gone.id);
        return !webhook.enabled && webhook;
      });
      expect(disabled).toMatchObject({
        enabled: false,
        disabledReason: 'gone',
        disabledAt: expect.any(String),
        failingSince: expect.any(String),
      });
      const listed = (await t.http.get('/email/webhooks').set(bearer(owner.adminKey)).expect(200)).body.webhooks;
      expect(listed.find((w: { id: string }) => w.id === gone.id)).toMatchObject({ enabled: false, disabledReason: 'gone' });

      const [delivery] = await waitForValue('the delivery to fail', async () => {
        const list = await deliveriesOf(owner.adminKey, gone.id);
        return list[0]?.status === 'failed' && list;
      });
      expect(delivery.attempts.map((a) => [a.attempt, a.statusCode, a.succeeded])).toEqual([[1, 410, false]]);
      expect(hooksAt(gonePath)).toHaveLength(1);

      const notice = await waitForValue('the webhook.disabled event', () => hooksAt(watcherPath)[0]);
      expect(() => new Webhook(watcher.secret).verify(notice.raw, notice.headers as Record<string, string>)).not.toThrow();
      expect(notice.body).toEqual({
        id: notice.headers['webhook-id'],
        type: 'webhook.disabled',
        timestamp: disabled.disabledAt,
        webhookId: gone.id,
        url: `${base}${goneUrlPath}`,
        reason: 'gone',
        failingSince: disabled.failingSince,
        detail: 'The endpoint answered 410 Gone',
      });
      // The one not subscribed gets no webhook.disabled event (nor, below, the one that answered 410). Its `sent`
      // events include the one of the email to the contact, sent from the account too.
      expect(hooksAt(otherPath).map((hook) => hook.body.type)).not.toContain('webhook.disabled');
      const first = await waitForValue('the message’s event at the other webhook', () =>
        hooksAt(otherPath).find((hook) => hook.body.messageId === messageId),
      );
      expect(first.body.type).toBe('sent');

      const mail = await sink.waitFor((m) => m.envelope.rcptTo.includes(owner.contact));
      expect(mail.parsed?.subject).toBe(`Webhook disabled: ${base}${goneUrlPath}`);
      expect(mail.parsed?.text).toContain(gone.id);
      expect(mail.parsed?.text).toContain('410 Gone');
      expect(mail.parsed?.text).not.toContain('s3cret');
      expect(mail.parsed?.from?.value[0].address).toBe('forms@mailroom.test');

      // Disabled: later events are not sent to it.
      const second = await send(owner);
      await waitForValue('the next message’s event at the other webhook', () =>
        hooksAt(otherPath).find((hook) => hook.body.messageId === second),
      );
      await sleep(300);
      expect(hooksAt(gonePath).map((hook) => hook.body.type)).toEqual(['sent']);
      expect(hooksAt(otherPath).map((hook) => hook.body.type)).not.toContain('webhook.disabled');

      // Enabled again through the API: the reason and the failures are cleared, and events flow again.
      receiver.answers.set(gonePath, 200);
      const enabled = await t.http.patch(`/email/webhooks/${gone.id}`).set(bearer(owner.adminKey)).send({ enabled: true }).expect(200);
      expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
      const third = await send(owner);
      await waitForValue('a delivery after enabling', () => hooksAt(gonePath).find((hook) => hook.body.messageId === third));
      expect(sink.messages.filter((m) => m.envelope.rcptTo.includes(owner.contact))).toHaveLength(1);
    });

    it('disables a webhook whose attempts have all failed for WEBHOOK_DISABLE_AFTER_FAILING_MS', async () => {
      const owner = await tenant();
      const downPath = `/down-${unique()}`;
      const watcherPath = `/watcher-${unique()}`;
      receiver.answers.set(downPath, 503);
      const down = await register(owner.adminKey, { url: `${base}${downPath}`, events: ['sent'] });
      await register(owner.adminKey, { url: `${base}${watcherPath}`, events: ['webhook.disabled', 'sent'] });

      await send(owner);
      await waitForValue('the first delivery to fail', async () => (await deliveriesOf(owner.adminKey, down.id))[0]?.status === 'failed');
      const failing = await webhookOf(owner.adminKey, down.id);
      expect(failing).toMatchObject({ enabled: true, disabledReason: null, failingSince: expect.any(String) });

      // Failures only, for longer than the span: the next failed attempt disables it.
      await sleep(Math.max(0, Date.parse(failing.failingSince) + FAILING_SPAN_MS + 50 - Date.now()));
      await send(owner);
      const disabled = await waitForValue('the webhook to be disabled', async () => {
        const webhook = await webhookOf(owner.adminKey, down.id);
        return !webhook.enabled && webhook;
      });
      expect(disabled).toMatchObject({ disabledReason: 'failing', failingSince: failing.failingSince, disabledAt: expect.any(String) });

      const notice = await waitForValue('the webhook.disabled event', () =>
        hooksAt(watcherPath).find((hook) => hook.body.type === 'webhook.disabled'),
      );
      expect(notice.body).toMatchObject({
        webhookId: down.id,
        reason: 'failing',
        failingSince: failing.failingSince,
        detail: `Every attempt failed since ${failing.failingSince}`,
      });
      const mail = await sink.waitFor((m) => m.envelope.rcptTo.includes(owner.contact));
      expect(mail.parsed?.text).toContain(`Every attempt to deliver to it failed since ${failing.failingSince}`);

      const enabled = await t.http.patch(`/email/webhooks/${down.id}`).set(bearer(owner.adminKey)).send({ enabled: true }).expect(200);
      expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
    });

    it('emails the contact once per disabled webhook, however many runs overlap', async () => {
      const owner = await tenant();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await register(owner.adminKey, { url: `${base}/overlap-${i}`, events: ['sent'] })).id);
      await t.app.get(DataSource).query(
        `UPDATE webhooks SET enabled = false, disabled_reason = 'gone', disabled_at = now(), failing_since = now(), disabled_notice_pending = true
         WHERE id = ANY($1)`,
        [ids],
      );
      const notices = t.app.get(WebhookDisabledNotices);
      const claimed = await Promise.all([notices.sendDue(), notices.sendDue(), notices.sendDue()]);
      expect(claimed.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(3);
      const toContact = () => sink.messages.filter((m) => m.envelope.rcptTo.includes(owner.contact));
      await waitForValue('an email per webhook', () => toContact().length >= 3);
      await sleep(500);
      expect(
        toContact()
          .map((m) => ids.find((id) => m.parsed?.text?.includes(id)))
          .sort(),
      ).toEqual([...ids].sort());
    });

    it('records a webhook disabled through the API as such, without an event or an email', async () => {
      const owner = await tenant();
      const watcherPath = `/watcher-${unique()}`;
      await register(owner.adminKey, { url: `${base}${watcherPath}`, events: ['webhook.disabled'] });
      const created = await register(owner.adminKey, { url: `${base}/off`, events: ['sent'], enabled: false });
      expect(await webhookOf(owner.adminKey, created.id)).toMatchObject({ enabled: false, disabledReason: 'manual' });
      const hook = await register(owner.adminKey, { url: `${base}/manual`, events: ['sent'] });
      const res = await t.http.patch(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).send({ enabled: false }).expect(200);
      expect(res.body).toMatchObject({ enabled: false, disabledReason: 'manual', disabledAt: expect.any(String), failingSince: null });
      await sleep(500);
      expect(hooksAt(watcherPath)).toEqual([]);
      expect(sink.messages.filter((m) => m.envelope.rcptTo.includes(owner.contact))).toEqual([]);
    });
  });

  describe('payload cap', () => {
    it('sends an event over WEBHOOK_MAX_PAYLOAD_BYTES thin, and the URL in it answers the whole event', async () => {
      const owner = await tenant();
      const path = `/forms-${unique()}`;
      const hook = await register(owner.adminKey, { url: `${base}${path}`, events: ['form.submission'] });
      const form = await t.http
        .post('/api/forms')
        .set(bearer(owner.adminKey))
        .send({ name: 'Contact', to: 'owner@acme.example', rateLimit: 1000 })
        .expect(201);
      const message = `${unique()} ${'long message '.repeat(2000)}`;
      const submitted = await t.http
        .post(`/f/${form.body.id}`)
        .set({ 'X-Api-Key': owner.adminKey, Accept: 'application/json' })
        .send({ email: 'cy@example.org', message })
        .expect(200);

      const delivered = await waitForValue('the thin form.submission event', () => hooksAt(path)[0]);
      expect(() => new Webhook(hook.secret).verify(delivered.raw, delivered.headers as Record<string, string>)).not.toThrow();
      expect(Buffer.byteLength(delivered.raw)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
      const eventId = delivered.headers['webhook-id'] as string;
      expect(delivered.body).toEqual({
        id: eventId,
        type: 'form.submission',
        timestamp: expect.any(String),
        formId: form.body.id,
        formName: 'Contact',
        submissionId: submitted.body.submissionId,
        thin: true,
        fullEventBytes: expect.any(Number),
        fullEventUrl: `http://mailroom.test/email/webhooks/events/${eventId}`,
      });
      expect(delivered.body.fullEventBytes).toBeGreaterThan(message.length);

      // The URL's path, with a key of the account, answers the event whole: the body a small event would have had.
      const fetchPath = new URL(delivered.body.fullEventUrl as string).pathname;
      const full = await t.http.get(fetchPath).set(bearer(owner.adminKey)).expect(200);
      expect(full.body).toEqual({
        id: eventId,
        type: 'form.submission',
        timestamp: delivered.body.timestamp,
        formId: form.body.id,
        formName: 'Contact',
        submissionId: submitted.body.submissionId,
        fields: { email: 'cy@example.org', message },
        files: [],
        messageIds: expect.any(Array),
      });
      expect(Buffer.byteLength(JSON.stringify(full.body))).toBe(delivered.body.fullEventBytes);
      const { key: reader } = await createKey(t, owner.adminKey, { keyType: 'usage', permissions: ['webhooks.read'] });
      await t.http.get(fetchPath).set(bearer(reader)).expect(200);
      const { key: sender } = await createKey(t, owner.adminKey, { keyType: 'usage', permissions: ['email.send'] });
      expect((await t.http.get(fetchPath).set(bearer(sender)).expect(403)).body.error.code).toBe('FORBIDDEN');
      const stranger = await createAccount(t, 'Stranger');
      expect((await t.http.get(fetchPath).set(bearer(stranger.adminKey)).expect(404)).body.error.code).toBe('NOT_FOUND');

      // The delivery log keeps the thin event: retries and replays send it as it was.
      const [delivery] = await deliveriesOf(owner.adminKey, hook.id);
      expect(delivery.payload).toMatchObject({ thin: true, submissionId: submitted.body.submissionId });
      expect(delivery.payload.fields).toBeUndefined();

      // Retention: the full body stays while a delivery of its event does, and goes with the last one.
      const db = t.app.get(DataSource);
      const sweep = () => t.app.get(RetentionSweeper).sweep();
      await db.query(`UPDATE webhook_event_bodies SET created_at = now() - interval '31 days' WHERE id = $1`, [eventId]);
      await sweep();
      await t.http.get(fetchPath).set(bearer(owner.adminKey)).expect(200);
      await db.query(`UPDATE webhook_deliveries SET updated_at = now() - interval '31 days' WHERE event_id = $1`, [eventId]);
      // Counted apart: the deliveries, and the whole bodies they left without one.
      expect(await sweep()).toMatchObject({ webhook_deliveries: 1, webhook_event_bodies: 1 });
      expect(await deliveriesOf(owner.adminKey, hook.id)).toEqual([]);
      await t.http.get(fetchPath).set(bearer(owner.adminKey)).expect(404);
    });
  });

  describe('recover', () => {
    it('replays the failed deliveries of events since T once each, and not those before T', async () => {
      const owner = await tenant();
      const path = `/flaky-${unique()}`;
      receiver.answers.set(path, 500);
      const hook = await register(owner.adminKey, { url: `${base}${path}`, events: ['sent'] });
      const failedCount = async (n: number) =>
        waitForValue(`${n} failed deliveries`, async () => {
          const list = await deliveriesOf(owner.adminKey, hook.id);
          return list.filter((d) => d.status === 'failed').length === n && list;
        });

      const before = await send(owner);
      await failedCount(1);
      await sleep(20);
      const since = new Date().toISOString();
      const after = [await send(owner), await send(owner)];
      const failed = await failedCount(3);
      expect(failed.map((d) => d.payload.messageId).sort()).toEqual([before, ...after].sort());

      receiver.answers.set(path, 200);
      const recovered = await t.http.post(`/email/webhooks/${hook.id}/recover`).set(bearer(owner.adminKey)).send({ since }).expect(202);
      expect(recovered.body).toEqual({ queued: 2, more: false, since, until: expect.any(String) });
      // Called again at once: those two are no longer failed, nothing is queued twice.
      const again = await t.http.post(`/email/webhooks/${hook.id}/recover`).set(bearer(owner.adminKey)).send({ since }).expect(202);
      expect(again.body).toMatchObject({ queued: 0, more: false });

      const settled = await waitForValue('the recovered deliveries to succeed', async () => {
        const list = await deliveriesOf(owner.adminKey, hook.id);
        return list.filter((d) => d.status === 'succeeded').length === 2 && list;
      });
      for (const delivery of settled.filter((d) => d.status === 'succeeded')) {
        expect(after).toContain(delivery.payload.messageId);
        expect(delivery.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
          [1, 500],
          [2, 500],
          [3, 200],
        ]);
      }
      await sleep(300);
      const requests = (messageId: string) => hooksAt(path).filter((hook) => hook.body.messageId === messageId);
      for (const messageId of after) expect(requests(messageId)).toHaveLength(3);
      expect(requests(before)).toHaveLength(2);
      expect(settled.find((d) => d.payload.messageId === before)?.status).toBe('failed');
    });

    it('recovers at most 1000 failed deliveries a call, and says when more are left', async () => {
      const owner = await tenant();
      const hook = await register(owner.adminKey, { url: `${base}/recover-many-${unique()}`, events: ['sent'] });
      const since = new Date(Date.now() - 60_000).toISOString();
      const prefix = unique();
      await t.app.get(DataSource).query(
        `INSERT INTO webhook_deliveries (id, account_id, webhook_id, event_id, event_type, payload, status, attempts, next_attempt_at)
         SELECT 'whd_' || $3 || g, $1, $2, 'evt_' || $3 || g, 'sent', jsonb_build_object('type', 'sent', 'timestamp', now()), 'failed', 1, NULL
         FROM generate_series(1, 1001) g`,
        [owner.accountId, hook.id, prefix],
      );
      const recover = () => t.http.post(`/email/webhooks/${hook.id}/recover`).set(bearer(owner.adminKey)).send({ since }).expect(202);
      expect((await recover()).body).toMatchObject({ queued: 1000, more: true, since });
      expect((await recover()).body).toMatchObject({ queued: 1, more: false, since });
      expect((await recover()).body).toMatchObject({ queued: 0, more: false });
      await t.http.delete(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('refuses a bad window, an unknown webhook and a disabled one, in the error body', async () => {
      const owner = await tenant();
      const hook = await register(owner.adminKey, { url: `${base}/recover-refusals`, events: ['sent'] });
      const recover = (id: string, body: Record<string, unknown>) =>
        t.http.post(`/email/webhooks/${id}/recover`).set(bearer(owner.adminKey)).send(body);

      const missing = await recover(hook.id, {}).expect(400);
      expect(missing.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { fields: [{ field: 'since' }] } });
      const notDate = await recover(hook.id, { since: 'yesterday' }).expect(400);
      const offsetMessage = 'since must be an ISO 8601 date-time with its offset (Z or ±hh:mm)';
      expect(notDate.body.error.details.fields).toEqual([{ field: 'since', message: offsetMessage }]);
      // Without an offset it would be read in the server's zone.
      for (const since of ['2026-06-09T12:00:00', '2026-06-09', '2026-02-30T12:00:00Z']) {
        expect((await recover(hook.id, { since }).expect(400)).body.error.details.fields).toEqual([
          { field: 'since', message: offsetMessage },
        ]);
      }
      await recover(hook.id, { since: '2026-06-09T12:00:00+02:00', until: '2026-06-09T12:00:00Z' }).expect(202);
      const backwards = await recover(hook.id, { since: '2026-06-09T12:00:00Z', until: '2026-06-09T08:00:00Z' }).expect(400);
      expect(backwards.body.error.details.fields).toEqual([{ field: 'until', message: 'must be after since' }]);
      await recover(hook.id, { since: '2026-06-09T12:00:00Z', extra: 1 }).expect(400);
      expect((await recover('whk_unknown', { since: '2026-06-09T12:00:00Z' }).expect(404)).body.error.code).toBe('NOT_FOUND');

      await t.http.patch(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).send({ enabled: false }).expect(200);
      expect((await recover(hook.id, { since: '2026-06-09T12:00:00Z' }).expect(409)).body.error.code).toBe('CONFLICT');
    });
  });
});
