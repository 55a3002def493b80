import { randomBytes } from 'node:crypto';
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
});
