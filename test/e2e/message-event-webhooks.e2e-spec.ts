import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
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
  status: string;
  nextAttemptAt: string | null;
  attempts: { attempt: number; statusCode: number | null; startedAt: string }[];
  payload: HookBody;
}

/** An endpoint that answers `status`, holding each answer while `hold` is set; it counts requests at once. */
async function startHoldingReceiver(): Promise<{
  url: string;
  requests: HookBody[];
  status: number;
  hold: Promise<void> | null;
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
}> {
  const state = {
    url: '',
    requests: [] as HookBody[],
    status: 500,
    hold: null as Promise<void> | null,
    inFlight: 0,
    maxInFlight: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = createServer((req, res) => {
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      state.requests.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as HookBody);
      void (state.hold ?? Promise.resolve()).then(() => {
        state.inFlight--;
        res.statusCode = state.status;
        res.end(state.status === 200 ? 'thanks' : 'down');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return state;
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
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await receiver.close();
  });

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
    expect(await hook('unsubscribed', messageId)).toMatchObject({ recipient: 'leaver@example.org' });
    // The publisher polls every 50 ms: a second webhook would have arrived by now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received.filter((h) => h.body.type === 'unsubscribed' && h.body.messageId === messageId)).toHaveLength(1);
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
    it('makes a retry waiting for its backoff at once, one request at a time, and the delivery succeeds', async () => {
      const endpoint = await startHoldingReceiver();
      try {
        const registered = await t.http
          .post('/email/webhooks')
          .set(bearer(owner.adminKey))
          .send({ url: endpoint.url, events: ['sent'] })
          .expect(201);
        const webhookId: string = registered.body.id;
        const deliveries = async (): Promise<DeliveryLog[]> =>
          (await t.http.get(`/email/webhooks/${webhookId}/deliveries`).set(bearer(owner.adminKey)).expect(200)).body.deliveries;
        const replay = (id: string) => t.http.post(`/email/webhooks/${webhookId}/deliveries/${id}/replay`).set(bearer(owner.adminKey));

        const { messageId } = await sendTracked(`replayed-${randomBytes(4).toString('hex')}@example.org`);
        // The default schedule: a retry after about 5 s, then one after about 5 min.
        const waiting = await waitForValue('two failed attempts and a retry in 5 min', async () => {
          const [delivery] = await deliveries();
          return delivery?.status === 'pending' && delivery.attempts.length === 2 && delivery;
        });
        expect(waiting.payload.messageId).toBe(messageId);
        const backoffEnds = Date.parse(waiting.nextAttemptAt!);

        // The endpoint is fixed; its answer to the replayed attempt is held, and more replays come meanwhile.
        endpoint.status = 200;
        let release = () => {};
        endpoint.hold = new Promise<void>((resolve) => (release = resolve));
        const replayed = await replay(waiting.id).expect(202);
        expect(replayed.body).toMatchObject({ id: waiting.id, status: 'pending', attempts: waiting.attempts });
        await waitForValue('the replayed attempt', () => endpoint.requests.length === 3);
        const during = await Promise.all([replay(waiting.id), replay(waiting.id)]);
        expect(during.map((r) => r.status)).toEqual([202, 202]);
        release();
        endpoint.hold = null;

        const succeeded = await waitForValue('the delivery to succeed', async () => {
          const [delivery] = await deliveries();
          return delivery?.status === 'succeeded' && delivery;
        });
        expect(succeeded.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
          [1, 500],
          [2, 500],
          [3, 200],
        ]);
        // Made by the replay, not by the retry the backoff had scheduled.
        expect(Date.parse(succeeded.attempts[2].startedAt)).toBeLessThan(backoffEnds);
        // The replays during the attempt in flight started no second one.
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(endpoint.requests.filter((body) => body.messageId === messageId)).toHaveLength(3);
        expect(endpoint.maxInFlight).toBe(1);
      } finally {
        await endpoint.close();
      }
    });
  });
});
