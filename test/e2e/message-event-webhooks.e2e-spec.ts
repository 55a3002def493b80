import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { startTimedReceiver, type TimedReceiver } from '../support/timed-receiver';
import { waitForValue } from '../support/wait-for';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const PROVIDER_SECRET = 'provider-secret-for-the-event-webhooks-test';
const DESKTOP_BROWSER =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';

interface HookBody {
  id: string;
  type: string;
  messageId?: string;
  recipient?: string | null;
  machine?: boolean;
  detail?: string | null;
  metadata?: Record<string, string>;
  attempts?: number;
  nextAttemptAt?: string | null;
  timestamp?: string;
}

interface DeliveryLog {
  id: string;
  /** The `webhook-id` header of its requests. */
  eventId: string;
  status: string;
  nextAttemptAt: string | null;
  attempts: { attempt: number; statusCode: number | null; startedAt: string }[];
  payload: HookBody;
}

/**
 * Every source of message events feeds the customer's webhooks: the worker (sent), the tracking links a
 * recipient follows (opened, clicked, unsubscribed) and the provider's signed events (delivered, bounced,
 * complained). Each webhook arrives signed and verifies with the `standardwebhooks` package.
 */
describe('message events → signed webhooks', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let receiver: WebhookReceiver<HookBody>;
  let owner: { accountId: string; adminKey: string };
  let domain: string;
  let secret: string;
  let webhookId: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    receiver = await startWebhookReceiver<HookBody>();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        PROVIDER_WEBHOOK_SECRET: PROVIDER_SECRET,
        // A deferred email's retries within milliseconds (the D-20 schedule, scaled): failed after its last attempt.
        EMAIL_RETRY_FIRST_DELAY_MS: '1',
      },
    });
    owner = await createAccount(t, 'Events');
    domain = `${randomBytes(4).toString('hex')}.events.test`;
    await createVerifiedDomain(t, owner.accountId, domain);
    const url = `${receiver.base}/hooks`;
    const registered = await t.http
      .post('/email/webhooks')
      .set(bearer(owner.adminKey))
      .send({ url, events: ['sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained', 'unsubscribed'] })
      .expect(201);
    secret = registered.body.secret;
    webhookId = registered.body.id;
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await receiver.close();
  });

  /** The delivery log of a webhook, newest first, each delivery with its attempts. */
  async function deliveriesOf(id: string): Promise<DeliveryLog[]> {
    return (await t.http.get(`/email/webhooks/${id}/deliveries`).set(bearer(owner.adminKey)).expect(200)).body.deliveries;
  }

  /** The webhook of this type for this message, once it arrived; its signature must verify. */
  async function hook(type: string, messageId: string): Promise<HookBody> {
    const arrived = await waitForValue(`a ${type} webhook for ${messageId}`, () =>
      receiver.received.find((h) => h.body.type === type && h.body.messageId === messageId),
    );
    const headers = {
      'webhook-id': String(arrived.headers['webhook-id']),
      'webhook-timestamp': String(arrived.headers['webhook-timestamp']),
      'webhook-signature': String(arrived.headers['webhook-signature']),
    };
    expect(new Webhook(secret).verify(arrived.raw, headers)).toEqual(arrived.body);
    expect(arrived.headers['webhook-id']).toBe(arrived.body.id);
    return arrived.body;
  }

  /** Sends a tracked HTML email to one recipient and waits until the worker has sent it. */
  async function sendTracked(to: string): Promise<{ messageId: string; html: string; listUnsubscribe: string }> {
    const res = await t.http
      .post('/email/send')
      .set(bearer(owner.adminKey))
      .send({
        from: `news@${domain}`,
        to,
        subject: 'Tracked',
        html: '<html><body><p>Read <a href="https://shop.example.com/sale?x=1&amp;y=2">the sale</a></p></body></html>',
        tracking: { opens: true, clicks: true, unsubscribe: true },
        metadata: { campaign: 'autumn' },
      })
      .expect(200);
    const mail = await sink.waitFor((m) => m.envelope.rcptTo.includes(to));
    const listUnsubscribe = /^List-Unsubscribe:\s*<([^>]+)>/im.exec(mail.raw.toString('utf8'))?.[1] ?? '';
    return { messageId: res.body.messageId, html: String(mail.parsed?.html ?? ''), listUnsubscribe };
  }

  /** The path of the first link under the test app's PUBLIC_URL matching `prefix` in the HTML. */
  function linkPath(html: string, prefix: string): string {
    const match = new RegExp(`http://mailroom\\.test(${prefix}[A-Za-z0-9_.-]+)`).exec(html);
    if (!match) throw new Error(`no ${prefix} link in ${html}`);
    return match[1];
  }

  /** Past the 10 s in which hits count as machines'. */
  async function sentLongAgo(messageId: string): Promise<void> {
    await t.app.get(DataSource).query(`UPDATE messages SET sent_at = now() - interval '1 hour' WHERE id = $1`, [messageId]);
  }

  function signedProviderCall(body: unknown): { headers: Record<string, string>; payload: string } {
    const id = `pe_${randomBytes(6).toString('hex')}`;
    const payload = JSON.stringify(body);
    const now = new Date();
    const signature = new Webhook(Buffer.from(PROVIDER_SECRET, 'utf8'), { format: 'raw' }).sign(id, now, payload);
    return {
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signature,
      },
      payload,
    };
  }

  it('a tracked email: sent, then a human open and a click, each a signed webhook with the message metadata', async () => {
    const { messageId, html } = await sendTracked('reader@example.org');
    const sent = await hook('sent', messageId);
    expect(sent).toMatchObject({ recipient: 'reader@example.org', metadata: { campaign: 'autumn' } });

    await sentLongAgo(messageId);
    await t.http.get(linkPath(html, '/t/o/')).set('User-Agent', DESKTOP_BROWSER).expect(200);
    const opened = await hook('opened', messageId);
    expect(opened).toMatchObject({ recipient: 'reader@example.org', machine: false, metadata: { campaign: 'autumn' } });

    const click = await t.http.get(linkPath(html, '/t/c/')).set('User-Agent', DESKTOP_BROWSER).expect(302);
    expect(click.headers.location).toBe('https://shop.example.com/sale?x=1&y=2');
    const clicked = await hook('clicked', messageId);
    expect(clicked).toMatchObject({ recipient: 'reader@example.org', machine: false, detail: 'https://shop.example.com/sale?x=1&y=2' });
  });

  it('an Apple Mail Privacy Protection open is delivered flagged as a machine open', async () => {
    const { messageId, html } = await sendTracked('apple@example.org');
    await sentLongAgo(messageId);
    await t.http.get(linkPath(html, '/t/o/')).set('User-Agent', 'Mozilla/5.0').expect(200);
    expect(await hook('opened', messageId)).toMatchObject({ recipient: 'apple@example.org', machine: true });
  });

  it('a one-click unsubscribe fires one unsubscribed webhook, however often it is posted', async () => {
    const { messageId, listUnsubscribe } = await sendTracked('leaver@example.org');
    const path = linkPath(listUnsubscribe, '/u/');
    await t.http.post(path).type('form').send('List-Unsubscribe=One-Click').expect(200);
    await t.http.post(path).type('form').send('List-Unsubscribe=One-Click').expect(200);
    const unsubscribed = await hook('unsubscribed', messageId);
    expect(unsubscribed).toMatchObject({ recipient: 'leaver@example.org' });
    // Each webhook event is one of the message's events (an outbox row written with it): the second post added none.
    const status = await t.http.get(`/email/status/${messageId}`).set(bearer(owner.adminKey)).expect(200);
    expect((status.body.events as { type: string }[]).filter((e) => e.type === 'unsubscribed')).toHaveLength(1);
    // Its one delivery, delivered by one attempt.
    const delivered = await waitForValue('the unsubscribed delivery to succeed', async () => {
      const mine = (await deliveriesOf(webhookId)).filter((d) => d.payload.type === 'unsubscribed' && d.payload.messageId === messageId);
      return mine.every((d) => d.status === 'succeeded') && mine;
    });
    expect(delivered.map((d) => [d.eventId, d.attempts.length])).toEqual([[unsubscribed.id, 1]]);
  });

  it("the provider's delivered, bounced and complained events become signed webhooks and move the message", async () => {
    const delivered = await sendTracked('kept@example.org');
    const bounced = await sendTracked('gone@example.org');
    const complained = await sendTracked('angry@example.org');
    await Promise.all([delivered, bounced, complained].map(({ messageId }) => hook('sent', messageId)));

    const call = signedProviderCall([
      { messageId: delivered.messageId, type: 'delivered', recipient: 'kept@example.org' },
      { messageId: bounced.messageId, type: 'bounced', recipient: 'gone@example.org', reason: '550 5.1.1 no such user' },
      { messageId: complained.messageId, type: 'complained', recipient: 'angry@example.org' },
    ]);
    const answer = await t.http.post('/provider/events').set(call.headers).send(call.payload).expect(202);
    expect(answer.body).toEqual({ received: 3, applied: 3, ignored: 0 });

    expect(await hook('delivered', delivered.messageId)).toMatchObject({ recipient: 'kept@example.org' });
    expect(await hook('bounced', bounced.messageId)).toMatchObject({
      recipient: 'gone@example.org',
      detail: expect.stringContaining('550 5.1.1'),
    });
    expect(await hook('complained', complained.messageId)).toMatchObject({ recipient: 'angry@example.org' });

    const status = async (id: string) => (await t.http.get(`/email/status/${id}`).set(bearer(owner.adminKey)).expect(200)).body;
    expect((await status(delivered.messageId)).status).toBe('delivered');
    expect((await status(bounced.messageId)).status).toBe('bounced');
    const check = await t.http
      .get('/email/suppression/check')
      .query({ email: 'angry@example.org' })
      .set(bearer(owner.adminKey))
      .expect(200);
    expect(check.body).toMatchObject({ suppressed: true, reason: 'complained' });
  });

  it('a deferred email fires a `deferred` webhook per retried attempt, then `failed` once its attempts are used up', async () => {
    const path = `/outcomes-${randomBytes(4).toString('hex')}`;
    const outcomes = await t.http
      .post('/email/webhooks')
      .set(bearer(owner.adminKey))
      .send({ url: `${receiver.base}${path}`, events: ['failed', 'deferred'] })
      .expect(201);
    const to = `full-${randomBytes(4).toString('hex')}@example.org`;
    sink.rejectRecipient(to, 451, '4.2.2 Mailbox full, try again later');
    const res = await t.http
      .post('/email/send')
      .set(bearer(owner.adminKey))
      .send({ from: `news@${domain}`, to, subject: 'Deferred', text: 'x', metadata: { order: '42' } })
      .expect(200);
    const messageId: string = res.body.messageId;
    const at = () => receiver.received.filter((h) => h.path === path && h.body.messageId === messageId);

    const failed = await waitForValue('the failed webhook', () => at().find((h) => h.body.type === 'failed'), 45_000);
    expect(() => new Webhook(outcomes.body.secret).verify(failed.raw, failed.headers as Record<string, string>)).not.toThrow();
    const attempts = 29; // 1 + the D-20 retries within 24 h
    expect(failed.body).toMatchObject({
      type: 'failed',
      messageId,
      recipient: to,
      metadata: { order: '42' },
      attempts,
      detail: expect.stringContaining(`gave up after ${attempts} attempts`),
      timestamp: expect.any(String),
    });
    expect(failed.body.detail).toContain('451');
    const deferred = await waitForValue('a deferred webhook per retried attempt', () => {
      const list = at().filter((h) => h.body.type === 'deferred');
      return list.length === attempts - 1 && list;
    });
    expect(deferred.map((h) => h.body.attempts).sort((a, b) => a! - b!)).toEqual(Array.from({ length: attempts - 1 }, (_, i) => i + 1));
    for (const h of deferred) {
      expect(h.body).toMatchObject({
        messageId,
        recipient: to,
        metadata: { order: '42' },
        detail: expect.stringContaining('451 4.2.2'),
        nextAttemptAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      expect(Date.parse(h.body.nextAttemptAt!)).toBeGreaterThanOrEqual(Date.parse(h.body.timestamp!));
    }
    expect(failed.body).not.toHaveProperty('nextAttemptAt');
    // Only the subscribed types: the first webhook (sent, delivered, …) got none of these.
    expect(receiver.received.filter((h) => h.path === '/hooks' && h.body.messageId === messageId)).toEqual([]);
    sink.clearRejections();
  });

  describe('replay', () => {
    let endpoint: TimedReceiver;

    beforeAll(async () => {
      endpoint = await startTimedReceiver();
    });

    afterAll(async () => {
      await endpoint.close();
    });

    /** A webhook of `sent` events at `path` of the endpoint, its delivery log and its replay. */
    async function registerAt(path: string) {
      const registered = await t.http
        .post('/email/webhooks')
        .set(bearer(owner.adminKey))
        .send({ url: `${endpoint.base}${path}`, events: ['sent'] })
        .expect(201);
      const id: string = registered.body.id;
      const delivery = async (): Promise<DeliveryLog | undefined> => (await deliveriesOf(id))[0];
      const replay = (deliveryId: string) =>
        t.http.post(`/email/webhooks/${id}/deliveries/${deliveryId}/replay`).set(bearer(owner.adminKey));
      const succeeded = () =>
        waitForValue('the delivery to succeed', async () => {
          const d = await delivery();
          return d?.status === 'succeeded' && d;
        });
      return { delivery, replay, succeeded };
    }

    it('makes a retry waiting for its backoff at once, one request at a time, and the delivery succeeds', async () => {
      const path = `/replayed-${randomBytes(4).toString('hex')}`;
      endpoint.behave(path, { status: 500 });
      const { delivery, replay, succeeded } = await registerAt(path);
      const { messageId } = await sendTracked(`replayed-${randomBytes(4).toString('hex')}@example.org`);
      // The default schedule: a retry after about 5 s, then one after about 5 min.
      const waiting = await waitForValue('two failed attempts and a retry in 5 min', async () => {
        const d = await delivery();
        return d?.status === 'pending' && d.attempts.length === 2 && d;
      });
      expect(waiting.payload.messageId).toBe(messageId);
      const backoffEnds = Date.parse(waiting.nextAttemptAt!);

      // The endpoint is fixed; its answer to the replayed attempt is held, and more replays come meanwhile.
      endpoint.behave(path, { hang: true });
      const replayed = await replay(waiting.id).expect(202);
      expect(replayed.body).toMatchObject({ id: waiting.id, status: 'pending', attempts: waiting.attempts });
      await waitForValue('the replayed attempt', () => endpoint.at(path).length === 3);
      const during = await Promise.all([replay(waiting.id), replay(waiting.id)]);
      expect(during.map((r) => r.status)).toEqual([202, 202]);
      endpoint.release(path, 200);

      const done = await succeeded();
      expect(done.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
        [1, 500],
        [2, 500],
        [3, 200],
      ]);
      // Made by the replay, not by the retry the backoff had scheduled.
      expect(Date.parse(done.attempts[2].startedAt)).toBeLessThan(backoffEnds);
      // The replays during the attempt in flight started no other request: none beside it, none after its success.
      expect(endpoint.at(path).map((r) => r.webhookId)).toEqual([waiting.eventId, waiting.eventId, waiting.eventId]);
      expect(endpoint.maxInFlight(path)).toBe(1);
    });

    it('a replay while a retry is in flight: when that retry fails, the next attempt comes at once, not after its backoff', async () => {
      const path = `/replayed-in-flight-${randomBytes(4).toString('hex')}`;
      endpoint.behave(path, { status: 500 });
      const { delivery, replay, succeeded } = await registerAt(path);
      await sendTracked(`in-flight-${randomBytes(4).toString('hex')}@example.org`);
      const failedOnce = await waitForValue('a failed first attempt', async () => {
        const d = await delivery();
        return d?.attempts.length === 1 && d;
      });

      // The retry (after about 5 s) is held; the owner fixes the endpoint and replays while it is in flight.
      endpoint.behave(path, { hang: true });
      await waitForValue('the retry', () => endpoint.at(path).length === 2, 20_000);
      await replay(failedOnce.id).expect(202);
      // The retry started before the fix fails: without the replay its round would wait about 5 min now.
      endpoint.release(path, 500);

      const done = await succeeded();
      expect(done.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
        [1, 500],
        [2, 500],
        [3, 200],
      ]);
      expect(endpoint.at(path)).toHaveLength(3);
      expect(endpoint.maxInFlight(path)).toBe(1);
    });
  });
});
