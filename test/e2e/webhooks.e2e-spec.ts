import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForValue } from '../support/wait-for';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  status: string;
  attempts: {
    attempt: number;
    startedAt: string;
    durationMs: number;
    statusCode: number | null;
    error: string | null;
    succeeded: boolean;
  }[];
  nextAttemptAt: string | null;
  createdAt: string;
  payload: Record<string, unknown>;
}

/** Registrations, signed deliveries to a real HTTP receiver, retries, the delivery log, replay and rotation (D-23). */
describe('webhooks', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let receiver: WebhookReceiver<Record<string, unknown>>;
  let base: string;
  let owner: { accountId: string; adminKey: string };
  let domain: string;
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
        WEBHOOK_RETRY_SCHEDULE: '200ms,400ms',
      },
    });
    owner = await createAccount(t, 'Hooks');
    domain = `${unique()}.hooks.test`;
    await createVerifiedDomain(t, owner.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await receiver.close();
  });

  async function register(body: Record<string, unknown>, key = owner.adminKey): Promise<{ id: string; secret: string }> {
    const res = await t.http.post('/email/webhooks').set(bearer(key)).send(body);
    expect(res.status).toBe(201);
    return res.body;
  }

  async function send(metadata?: Record<string, string>): Promise<string> {
    const res = await t.http
      .post('/email/send')
      .set(bearer(owner.adminKey))
      .send({ from: `hello@${domain}`, to: 'ada@example.org', subject: `hook ${unique()}`, text: 'x', ...(metadata ? { metadata } : {}) })
      .expect(200);
    return res.body.messageId;
  }

  async function deliveriesOf(webhookId: string, key = owner.adminKey): Promise<Delivery[]> {
    const res = await t.http.get(`/email/webhooks/${webhookId}/deliveries`).set(bearer(key)).expect(200);
    return res.body.deliveries;
  }

  const hooksAt = (path: string) => receiver.received.filter((hook) => hook.path === path);
  const hookFor = (path: string, messageId: string) =>
    waitForValue(`a webhook at ${path}`, () => hooksAt(path).find((hook) => hook.body.messageId === messageId));

  describe('registration', () => {
    it('creates, reads, lists, updates and deletes a webhook with exactly its fields', async () => {
      const created = await t.http
        .post('/email/webhooks')
        .set(bearer(owner.adminKey))
        .send({ url: `${base}/crud`, events: ['delivered', 'bounced', 'delivered'], description: 'CRM' })
        .expect(201);
      const { id, secret, createdAt, updatedAt } = created.body;
      expect(created.body).toEqual({
        id: expect.stringMatching(/^whk_[0-9A-Za-z]{22}$/),
        url: `${base}/crud`,
        events: ['delivered', 'bounced'],
        description: 'CRM',
        enabled: true,
        disabledReason: null,
        disabledAt: null,
        failingSince: null,
        maxConcurrency: 4,
        rateLimitPerSecond: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      });
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
      const shown = {
        id,
        url: `${base}/crud`,
        events: ['delivered', 'bounced'],
        description: 'CRM',
        enabled: true,
        disabledReason: null,
        disabledAt: null,
        failingSince: null,
        maxConcurrency: 4,
        rateLimitPerSecond: null,
        createdAt,
        updatedAt,
      };

      expect((await t.http.get(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200)).body).toEqual(shown);
      const list = await t.http.get('/email/webhooks').set(bearer(owner.adminKey)).expect(200);
      expect(list.body).toEqual({ webhooks: expect.arrayContaining([shown]) });
      expect(JSON.stringify(list.body)).not.toContain('whsec_');

      const patched = await t.http
        .patch(`/email/webhooks/${id}`)
        .set(bearer(owner.adminKey))
        .send({ events: ['opened', 'clicked'], description: null, enabled: false })
        .expect(200);
      expect(patched.body).toEqual({
        ...shown,
        events: ['opened', 'clicked'],
        description: null,
        enabled: false,
        disabledReason: 'manual',
        disabledAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(Date.parse(patched.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(updatedAt));

      expect((await t.http.delete(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200)).body).toEqual({
        success: true,
        message: `Webhook ${id} deleted`,
      });
      await t.http.get(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(404);
    });

    it('lets usage keys holding webhooks.* manage webhooks, and refuses keys without them', async () => {
      const { key: usage } = await createKey(t, owner.adminKey, { keyType: 'usage', permissions: ['webhooks.read', 'webhooks.write'] });
      const { id } = await register({ url: `${base}/usage`, events: ['opened'] }, usage);
      await t.http.get(`/email/webhooks/${id}`).set(bearer(usage)).expect(200);
      const { key: sender } = await createKey(t, owner.adminKey, { keyType: 'usage', permissions: ['email.send'] });
      const refused = await t.http.get('/email/webhooks').set(bearer(sender)).expect(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
      await t.http.delete(`/email/webhooks/${id}`).set(bearer(usage)).expect(200);
    });

    it.each([
      ['an ftp URL', 'ftp://example.com/hook', ['delivered'], 'url', /must use http or https, not ftp/],
      ['credentials in the URL', 'http://user:secret@example.com/hook', ['delivered'], 'url', /user name or password/],
      ['a URL that is none', 'not a url', ['delivered'], 'url', /not a valid URL/],
      ['a URL over 2048 characters', `https://example.com/${'a'.repeat(2048)}`, ['delivered'], 'url', /2048/],
      ['an unknown event', 'https://example.com/hook', ['delivered', 'teleported'], 'events', /unknown event type "teleported"/],
      ['no events', 'https://example.com/hook', [], 'events', /at least one event type/],
    ])('refuses %s (400 naming the field)', async (_label, url, events, field, message) => {
      const res = await t.http.post('/email/webhooks').set(bearer(owner.adminKey)).send({ url, events }).expect(400);
      expect(res.body).toEqual({
        error: {
          code: 'VALIDATION_FAILED',
          message: expect.any(String),
          details: { fields: [{ field, message: expect.stringMatching(message) }] },
        },
        documentation: expect.any(String),
      });
    });

    it('refuses unknown fields and a bad update', async () => {
      await t.http
        .post('/email/webhooks')
        .set(bearer(owner.adminKey))
        .send({ url: `${base}/x`, events: ['sent'], secret: 'mine' })
        .expect(400);
      const { id } = await register({ url: `${base}/x`, events: ['sent'], enabled: false });
      const res = await t.http.patch(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).send({ url: 'gopher://example.com' }).expect(400);
      expect(res.body.error.details.fields).toEqual([{ field: 'url', message: 'must use http or https, not gopher' }]);
      await t.http.patch(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).send({ events: null }).expect(400);
      await t.http.delete(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('answers 404 for another account’s webhook, on every route', async () => {
      const { id } = await register({ url: `${base}/mine`, events: ['delivered'], enabled: false });
      const other = await createAccount(t, 'Other');
      const as = bearer(other.adminKey);
      for (const res of [
        await t.http.get(`/email/webhooks/${id}`).set(as),
        await t.http.patch(`/email/webhooks/${id}`).set(as).send({ enabled: true }),
        await t.http.post(`/email/webhooks/${id}/rotate-secret`).set(as),
        await t.http.get(`/email/webhooks/${id}/deliveries`).set(as),
        await t.http.post(`/email/webhooks/${id}/deliveries/whd_unknown/replay`).set(as),
        await t.http.delete(`/email/webhooks/${id}`).set(as),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('NOT_FOUND');
      }
      expect((await t.http.get('/email/webhooks').set(as).expect(200)).body).toEqual({ webhooks: [] });
      expect((await t.http.get(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200)).body.enabled).toBe(false);
      await t.http.delete(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200);
    });
  });

  describe('delivery', () => {
    it('POSTs a signed `sent` event with the message’s metadata, to subscribed enabled webhooks only', async () => {
      const sent = await register({ url: `${base}/sent`, events: ['sent', 'delivered'] });
      const other = await register({ url: `${base}/not-subscribed`, events: ['delivered', 'bounced'] });
      const disabled = await register({ url: `${base}/disabled`, events: ['sent'], enabled: false });

      const messageId = await send({ campaign: 'x' });
      const hook = await hookFor('/sent', messageId);

      expect(() => new Webhook(sent.secret).verify(hook.raw, hook.headers as Record<string, string>)).not.toThrow();
      expect(() => new Webhook(disabled.secret).verify(hook.raw, hook.headers as Record<string, string>)).toThrow();
      expect(hook.headers['content-type']).toBe('application/json');
      expect(hook.headers['user-agent']).toBe('Mailroom-Webhooks/1');
      expect(hook.body).toEqual({
        id: hook.headers['webhook-id'],
        type: 'sent',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        messageId,
        recipient: 'ada@example.org',
        metadata: { campaign: 'x' },
        detail: expect.any(String),
        machine: false,
      });
      expect(hook.body.id).toMatch(/^evt_/);
      expect(Object.keys(hook.body).slice(0, 3)).toEqual(['id', 'type', 'timestamp']);

      const [delivery] = await waitForValue('the delivery to succeed', async () => {
        const list = await deliveriesOf(sent.id);
        return list[0]?.status === 'succeeded' && list;
      });
      expect(delivery).toEqual({
        id: expect.stringMatching(/^whd_/),
        eventId: hook.body.id,
        eventType: 'sent',
        status: 'succeeded',
        attempts: [
          {
            attempt: 1,
            startedAt: expect.any(String),
            durationMs: expect.any(Number),
            statusCode: 200,
            error: null,
            response: 'thanks',
            succeeded: true,
          },
        ],
        nextAttemptAt: null,
        createdAt: expect.any(String),
        payload: {
          type: 'sent',
          messageId,
          recipient: 'ada@example.org',
          timestamp: hook.body.timestamp,
          metadata: { campaign: 'x' },
          detail: hook.body.detail,
          machine: false,
        },
      });

      // The deliveries of one event are made together: the others would exist by now.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await deliveriesOf(other.id)).toEqual([]);
      expect(await deliveriesOf(disabled.id)).toEqual([]);
      expect(hooksAt('/not-subscribed')).toEqual([]);
      expect(hooksAt('/disabled')).toEqual([]);
      for (const { id } of [sent, other, disabled]) await t.http.delete(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('POSTs a `form.submission` event with the submission', async () => {
      const hook = await register({ url: `${base}/forms`, events: ['form.submission'] });
      const form = await t.http
        .post('/api/forms')
        .set(bearer(owner.adminKey))
        .send({ name: 'Contact', to: 'owner@acme.example', rateLimit: 1000 })
        .expect(201);
      const marker = unique();
      const submitted = await t.http
        .post(`/f/${form.body.id}`)
        .set({ 'X-Api-Key': owner.adminKey, Accept: 'application/json' })
        .send({ email: 'cy@example.org', message: marker })
        .expect(200);

      const delivered = await waitForValue('the form.submission webhook', () =>
        hooksAt('/forms').find((h) => h.body.submissionId === submitted.body.submissionId),
      );
      expect(() => new Webhook(hook.secret).verify(delivered.raw, delivered.headers as Record<string, string>)).not.toThrow();
      expect(delivered.body).toMatchObject({
        id: delivered.headers['webhook-id'],
        type: 'form.submission',
        formId: form.body.id,
        submissionId: submitted.body.submissionId,
        fields: { email: 'cy@example.org', message: marker },
        timestamp: expect.any(String),
      });
      await t.http.delete(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('retries a failing receiver on the schedule, lists every attempt, fails, and delivers again on replay with the same id', async () => {
      receiver.answers.set('/failing', 500);
      const hook = await register({ url: `${base}/failing`, events: ['sent'] });
      const messageId = await send();

      let sawRetryPending: Delivery | undefined;
      const failed = await waitForValue('the delivery to fail', async () => {
        const [delivery] = await deliveriesOf(hook.id);
        if (delivery?.status === 'pending' && delivery.attempts.length > 0) sawRetryPending = delivery;
        return delivery?.status === 'failed' && delivery;
      });
      expect(sawRetryPending?.nextAttemptAt).toEqual(expect.any(String));
      expect(Date.parse(sawRetryPending!.nextAttemptAt!)).toBeGreaterThan(Date.parse(sawRetryPending!.attempts[0].startedAt));
      expect(failed.nextAttemptAt).toBeNull();
      expect(failed.attempts.map((a) => [a.attempt, a.statusCode, a.error, a.succeeded])).toEqual([
        [1, 500, 'HTTP 500', false],
        [2, 500, 'HTTP 500', false],
        [3, 500, 'HTTP 500', false],
      ]);
      const started = failed.attempts.map((a) => Date.parse(a.startedAt));
      expect(started[1] - started[0]).toBeGreaterThanOrEqual(200);
      expect(started[2] - started[1]).toBeGreaterThanOrEqual(400);
      const requests = hooksAt('/failing').filter((h) => h.body.messageId === messageId);
      expect(requests).toHaveLength(3);
      expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([failed.eventId]));

      // Failed ones only, through the status filter.
      const onlyFailed = await t.http
        .get(`/email/webhooks/${hook.id}/deliveries?status=failed&limit=10`)
        .set(bearer(owner.adminKey))
        .expect(200);
      expect(onlyFailed.body.deliveries.map((d: Delivery) => d.id)).toEqual([failed.id]);

      receiver.answers.set('/failing', 200);
      const replay = await t.http.post(`/email/webhooks/${hook.id}/deliveries/${failed.id}/replay`).set(bearer(owner.adminKey)).expect(202);
      expect(replay.body).toMatchObject({ id: failed.id, eventId: failed.eventId, status: 'pending', attempts: failed.attempts });
      const replayed = await waitForValue('the replay to succeed', async () => {
        const [delivery] = await deliveriesOf(hook.id);
        return delivery?.status === 'succeeded' && delivery;
      });
      expect(replayed.attempts.map((a) => [a.attempt, a.statusCode, a.succeeded])).toEqual([
        [1, 500, false],
        [2, 500, false],
        [3, 500, false],
        [4, 200, true],
      ]);
      const again = hooksAt('/failing').filter((h) => h.body.messageId === messageId);
      expect(again).toHaveLength(4);
      expect(again[3].headers['webhook-id']).toBe(failed.eventId);
      expect(again[3].raw).toBe(requests[0].raw);
      expect(() => new Webhook(hook.secret).verify(again[3].raw, again[3].headers as Record<string, string>)).not.toThrow();

      await t.http.post(`/email/webhooks/${hook.id}/deliveries/whd_nope/replay`).set(bearer(owner.adminKey)).expect(404);
      await t.http.delete(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('does not follow redirects, and ends a delivery whose webhook was disabled meanwhile', async () => {
      receiver.answers.set('/moved', 302);
      const hook = await register({ url: `${base}/moved`, events: ['sent'] });
      await send();
      await waitForValue('the first attempt', async () => (await deliveriesOf(hook.id))[0]?.attempts.length === 1);
      await t.http.patch(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).send({ enabled: false }).expect(200);
      const failed = await waitForValue('the delivery to fail', async () => {
        const [delivery] = await deliveriesOf(hook.id);
        return delivery?.status === 'failed' && delivery;
      });
      // Normally the second attempt finds it disabled; on a slow machine the PATCH may land after it.
      const last = failed.attempts[failed.attempts.length - 1];
      expect(last).toMatchObject({ statusCode: null, error: 'the webhook is disabled', succeeded: false });
      const redirected = failed.attempts.slice(0, -1);
      expect(redirected.length).toBeGreaterThanOrEqual(1);
      for (const attempt of redirected) expect(attempt).toMatchObject({ statusCode: 302, error: 'HTTP 302: redirects are not followed' });
      expect(hooksAt('/moved')).toHaveLength(redirected.length);
      expect(hooksAt('/redirected')).toEqual([]);
      const replay = await t.http.post(`/email/webhooks/${hook.id}/deliveries/${failed.id}/replay`).set(bearer(owner.adminKey)).expect(409);
      expect(replay.body.error.code).toBe('CONFLICT');
      await t.http.delete(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('pages the delivery log newest first', async () => {
      const hook = await register({ url: `${base}/paged`, events: ['sent'] });
      const messageIds = [await send(), await send(), await send()];
      await waitForValue(
        'three deliveries',
        async () => (await deliveriesOf(hook.id)).filter((d) => d.status === 'succeeded').length === 3,
      );
      const first = await t.http.get(`/email/webhooks/${hook.id}/deliveries?limit=2`).set(bearer(owner.adminKey)).expect(200);
      expect(first.body.deliveries).toHaveLength(2);
      const second = await t.http
        .get(`/email/webhooks/${hook.id}/deliveries?limit=2&cursor=${first.body.nextCursor}`)
        .set(bearer(owner.adminKey))
        .expect(200);
      expect(second.body.nextCursor).toBeNull();
      const all: Delivery[] = [...first.body.deliveries, ...second.body.deliveries];
      expect(new Set(all.map((d) => d.payload.messageId))).toEqual(new Set(messageIds));
      const created = all.map((d) => Date.parse(d.createdAt));
      expect([...created].sort((a, b) => b - a)).toEqual(created);
      await t.http.get(`/email/webhooks/${hook.id}/deliveries?cursor=garbage`).set(bearer(owner.adminKey)).expect(400);
      await t.http.delete(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('signs with both the old and the new secret for 24 h after a rotation', async () => {
      const hook = await register({ url: `${base}/rotated`, events: ['sent'] });
      const rotated = await t.http.post(`/email/webhooks/${hook.id}/rotate-secret`).set(bearer(owner.adminKey)).expect(200);
      expect(rotated.body).toEqual({
        id: hook.id,
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
        previousSecretExpiresAt: expect.any(String),
      });
      expect(rotated.body.secret).not.toBe(hook.secret);
      const expiresIn = Date.parse(rotated.body.previousSecretExpiresAt) - Date.now();
      expect(expiresIn).toBeGreaterThan(24 * 3600_000 - 60_000);
      expect(expiresIn).toBeLessThanOrEqual(24 * 3600_000);

      const messageId = await send();
      const delivered = await hookFor('/rotated', messageId);
      const headers = delivered.headers as Record<string, string>;
      expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
      expect(() => new Webhook(hook.secret).verify(delivered.raw, headers)).not.toThrow();
      expect(() => new Webhook(rotated.body.secret).verify(delivered.raw, headers)).not.toThrow();
      await t.http.delete(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).expect(200);
    });

    it('rotates one at a time: of two concurrent rotations, each returned secret signs the next delivery', async () => {
      // Several webhooks, each rotated twice at once: without the row lock both calls retire the same secret.
      const paths = [0, 1, 2].map((i) => `/rotated-twice-${i}-${unique()}`);
      const hooks = await Promise.all(paths.map((path) => register({ url: `${base}${path}`, events: ['sent'] })));
      const rotate = (id: string) => t.http.post(`/email/webhooks/${id}/rotate-secret`).set(bearer(owner.adminKey)).expect(200);
      const rotations = await Promise.all(hooks.map((hook) => Promise.all([rotate(hook.id), rotate(hook.id)])));

      const messageId = await send();
      for (const [i, hook] of hooks.entries()) {
        const [first, second] = rotations[i].map((res) => res.body.secret as string);
        expect(first).not.toBe(second);
        const delivered = await hookFor(paths[i], messageId);
        const headers = delivered.headers as Record<string, string>;
        // The rotation that committed last signs, and the one before it for 24 h: both returned secrets verify.
        expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
        expect(() => new Webhook(first).verify(delivered.raw, headers)).not.toThrow();
        expect(() => new Webhook(second).verify(delivered.raw, headers)).not.toThrow();
        // The registration's secret was retired by the first rotation and dropped by the second.
        expect(() => new Webhook(hook.secret).verify(delivered.raw, headers)).toThrow();
        await t.http.delete(`/email/webhooks/${hook.id}`).set(bearer(owner.adminKey)).expect(200);
      }
    });
  });
});
