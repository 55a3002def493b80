import { randomBytes } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import { AppConfigService } from '../../src/config/app-config.service';
import { emails } from '../../src/metrics/metrics';
import { SoftBounces } from '../../src/suppression/soft-bounces';
import { BOUNCE_DOMAIN, BounceHarness, startBounceHarness } from '../support/bounce-harness';
import { deliveryStatusReport } from '../support/delivery-status-report';
import { bearer } from '../support/factories';
import { startWebhookReceiver, WebhookReceiver } from '../support/webhook-receiver';
import { waitFor } from '../support/wait-for';
import { postProviderEvents, providerSigner } from '../support/provider-events';

interface Status {
  status: string;
  events: { type: string; recipient?: string; detail?: string }[];
}
type HookBody = { type: string; messageId?: string };

const SECRET = 'bounce-events-secret';
const OWNER = 'owner@elsewhere.test';

/**
 * Bounces reported after sending (D-39, D-24, D-31): a provider's call is applied whole or not at all, once; a bounce
 * report received by mail once, whatever the forward beside it did; events find Mailroom's own message, never a
 * forwarded copy that keeps its Message-ID; soft bounces suppress only SOFT_BOUNCE_SUPPRESS_COUNT of them.
 */
describe('bounce events', () => {
  let h: BounceHarness;
  let receiver: WebhookReceiver<HookBody>;
  let client: Transporter;
  const unique = () => randomBytes(4).toString('hex');
  const provider = providerSigner(SECRET);

  beforeAll(async () => {
    receiver = await startWebhookReceiver<HookBody>();
    h = await startBounceHarness(
      { alias: [OWNER], keep: ['keeper@elsewhere.test'] },
      {
        PROVIDER_WEBHOOK_SECRET: SECRET,
        SOFT_BOUNCE_SUPPRESS_COUNT: '2',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      },
    );
    await h.t.http
      .post('/email/webhooks')
      .set(bearer(h.adminKey))
      .send({ url: `${receiver.base}/hooks`, events: ['bounced', 'delivered'] })
      .expect(201);
    client = nodemailer.createTransport({ host: '127.0.0.1', port: h.port, secure: false, ignoreTLS: true });
  });

  afterAll(async () => {
    client?.close();
    await h?.db.query('DROP TRIGGER IF EXISTS e2e_fail_once ON suppression_entries').catch(() => undefined);
    await h?.db.query('DROP TRIGGER IF EXISTS e2e_fail_once ON inbound_messages').catch(() => undefined);
    await h?.close();
    await receiver?.close();
  });

  const statusOf = async (messageId: string): Promise<Status> =>
    (await h.t.http.get(`/email/status/${messageId}`).set(bearer(h.adminKey)).expect(200)).body;
  const eventsOf = async (messageId: string, type: string) => (await statusOf(messageId)).events.filter((e) => e.type === type);
  const suppressed = async (email: string): Promise<boolean> =>
    (await h.t.http.get('/email/suppression/check').query({ email }).set(bearer(h.adminKey)).expect(200)).body.suppressed;
  const hooksOf = (messageId: string, type: string) =>
    receiver.received.filter((r) => r.body.type === type && r.body.messageId === messageId);

  /** A message Mailroom sent and the relay took: its id, return path and Message-ID. */
  const sent = async (to = `ada-${unique()}@example.org`) => {
    const subject = `sent ${unique()}`;
    const res = await h.t.http
      .post('/email/send')
      .set(bearer(h.adminKey))
      .send({ from: `hello@${BOUNCE_DOMAIN}`, to, subject, text: 'hi' })
      .expect(200);
    const outgoing = await h.sink.waitFor((m) => m.parsed?.subject === subject);
    const messageId = res.body.messageId as string;
    await waitFor(
      `${messageId} sent`,
      () => h.statusOf(messageId),
      (s) => s === 'sent',
    );
    return { messageId, to, returnPath: outgoing.envelope.mailFrom, headerMessageId: outgoing.parsed!.messageId! };
  };

  const post = (body: unknown, id = `evt_${unique()}`) => postProviderEvents(h.t.http, provider, body, id);

  /** INSERTs into `table` fail (a trigger in this test's own database) until `allowInserts`. */
  const failInserts = async (table: string) => {
    await h.db.query(
      `CREATE OR REPLACE FUNCTION e2e_fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'injected failure'; END $$`,
    );
    await h.db.query(`CREATE TRIGGER e2e_fail_once BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION e2e_fail_insert()`);
  };
  const allowInserts = (table: string) => h.db.query(`DROP TRIGGER IF EXISTS e2e_fail_once ON ${table}`);

  it('applies a provider call whole or not at all: a retry after a failed statement applies it once', async () => {
    const { messageId, to } = await sent();
    await failInserts('suppression_entries');
    const id = `evt_${unique()}`;
    const body = { messageId, type: 'bounced', recipient: to, reason: '550 5.1.1 no such user' };
    const bouncedCount = async () => (await emails.get()).values.find((v) => v.labels.status === 'bounced')?.value ?? 0;
    const bouncedBefore = await bouncedCount();
    const failed = await post(body, id);
    await allowInserts('suppression_entries');
    expect(failed.status).toBe(500);
    expect(await eventsOf(messageId, 'bounced')).toHaveLength(0);
    expect(await h.statusOf(messageId)).toBe('sent');
    expect(await suppressed(to)).toBe(false);
    expect(await bouncedCount()).toBe(bouncedBefore); // the move rolled back is not counted

    await post(body, id).expect(202, { received: 1, applied: 1, ignored: 0 });
    await post(body, id).expect(202, { received: 1, applied: 0, ignored: 1, duplicate: true });
    expect(await eventsOf(messageId, 'bounced')).toHaveLength(1);
    expect(await h.statusOf(messageId)).toBe('bounced');
    expect(await suppressed(to)).toBe(true);
    expect(await bouncedCount()).toBe(bouncedBefore + 1);
    // A webhook follows from each event, written with it (a trigger): one bounced event made one, so the call made
    // one delivery; once it arrived, nothing else of this call is left to arrive.
    const outboxed = await h.db.query(`SELECT 1 FROM event_outbox WHERE type = 'bounced' AND payload ->> 'messageId' = $1`, [messageId]);
    expect(outboxed).toHaveLength(1);
    await waitFor(
      'the bounced webhook',
      () => hooksOf(messageId, 'bounced'),
      (hooks) => hooks.length > 0,
    );
    expect(hooksOf(messageId, 'bounced')).toHaveLength(1);
  });

  it('finds Mailroom’s own message by its id or return path, and a Message-ID only when it names one message', async () => {
    const original = await sent();
    // A forwarded message that keeps the sent one's Message-ID (as forwarding does), to another address.
    const subject = `copy ${unique()}`;
    const raw = Buffer.from(
      [
        'From: Sender <sender@origin.test>',
        `To: alias@${BOUNCE_DOMAIN}`,
        `Subject: ${subject}`,
        `Message-ID: ${original.headerMessageId}`,
        'Date: Mon, 23 Nov 2026 10:00:00 +0000',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Hello.',
        '',
      ].join('\r\n'),
    );
    await client.sendMail({ envelope: { from: 'sender@origin.test', to: [`alias@${BOUNCE_DOMAIN}`] }, raw });
    const copy = await h.forwardedMessage(subject);
    await waitFor(
      'the copy sent',
      () => h.statusOf(copy.id),
      (s) => s === 'sent',
    );

    // Without a recipient the Message-ID names both: neither is touched.
    await post({ messageId: original.headerMessageId, type: 'delivered' }).expect(202, { received: 1, applied: 0, ignored: 1 });
    expect(await h.statusOf(original.messageId)).toBe('sent');
    expect(await h.statusOf(copy.id)).toBe('sent');

    // The return path names the original exactly, whatever Message-ID comes with it.
    await post({ returnPath: original.returnPath, messageId: original.headerMessageId, type: 'delivered' }).expect(202, {
      received: 1,
      applied: 1,
      ignored: 0,
    });
    expect(await h.statusOf(original.messageId)).toBe('delivered');
    expect(await h.statusOf(copy.id)).toBe('sent');

    // A Message-ID with the recipient of one of them: that one only.
    await post({ messageId: original.headerMessageId, type: 'bounced', recipient: OWNER, reason: '550 5.1.1 gone' }).expect(202, {
      received: 1,
      applied: 1,
      ignored: 0,
    });
    expect(await h.statusOf(copy.id)).toBe('bounced');
    expect(await eventsOf(original.messageId, 'bounced')).toHaveLength(0);
  });

  it('suppresses an address after SOFT_BOUNCE_SUPPRESS_COUNT soft bounces, counting again after a delivery', async () => {
    const to = `soft-${unique()}@example.org`;
    const first = await sent(to);
    await post({ messageId: first.messageId, type: 'bounced', bounceType: 'soft', reason: 'mailbox full' }).expect(202);
    expect(await h.statusOf(first.messageId)).toBe('bounced');
    expect(await suppressed(to)).toBe(false);

    // A delivery to it starts the count again.
    const delivered = await sent(to);
    await post({ messageId: delivered.messageId, type: 'delivered' }).expect(202);
    const second = await sent(to);
    await post({ messageId: second.messageId, type: 'bounced', reason: '452 4.2.2 Mailbox full' }).expect(202);
    expect(await suppressed(to)).toBe(false);

    // The same soft bounce reported again (another call) counts once.
    await post({ messageId: second.messageId, type: 'bounced', reason: '452 4.2.2 Mailbox full' }).expect(202);
    expect(await suppressed(to)).toBe(false);

    const third = await sent(to);
    await post({ messageId: third.messageId, type: 'bounced', bounceType: 'soft', reason: 'mailbox full' }).expect(202);
    expect(await suppressed(to)).toBe(true);
  });

  it('counts on after a delivered event that names no recipient of several, or a report that a relay passed it on', async () => {
    const to = `relayed-${unique()}@example.org`;
    const first = await sent(to);
    await post({ messageId: first.messageId, type: 'bounced', bounceType: 'soft', reason: 'mailbox full' }).expect(202);

    // Delivered, but to whom? Not a delivery to `to`.
    const subject = `shared ${unique()}`;
    const shared = await h.t.http
      .post('/email/send')
      .set(bearer(h.adminKey))
      .send({ from: `hello@${BOUNCE_DOMAIN}`, to: [to, `other-${unique()}@example.org`], subject, text: 'hi' })
      .expect(200);
    await waitFor(
      'the shared message sent',
      () => h.statusOf(shared.body.messageId),
      (s) => s === 'sent',
    );
    await post({ messageId: shared.body.messageId, type: 'delivered' }).expect(202, { received: 1, applied: 1, ignored: 0 });

    // A relay that sends no reports took it (Action: relayed): not the mailbox.
    const relayed = await sent(to);
    const report = deliveryStatusReport({ to: relayed.returnPath, recipient: to, action: 'relayed', status: '2.0.0' });
    await client.sendMail({ envelope: { from: 'sender@origin.test', to: [relayed.returnPath] }, raw: report });
    await waitFor(
      'the relayed report recorded',
      () => eventsOf(relayed.messageId, 'delivered'),
      (events) => events.length > 0,
    );
    expect(await softBounceRows(to)).toEqual([first.messageId]);

    const second = await sent(to);
    await post({ messageId: second.messageId, type: 'bounced', bounceType: 'soft', reason: 'mailbox full' }).expect(202);
    expect(await suppressed(to)).toBe(true);
  });

  it('records a bounce report once when the forward beside it failed and the sender sent it again', async () => {
    const { messageId, to, returnPath, headerMessageId } = await sent();
    const dsn = deliveryStatusReport({
      to: returnPath,
      recipient: to,
      status: '5.1.1',
      diagnostic: `550 5.1.1 <${to}>: no such user`,
      originalHeaders: [`Message-ID: ${headerMessageId}`],
    });
    // One transaction to the return path and to a forwarding alias: the forward's commit fails once (451).
    const envelope = { from: 'sender@origin.test', to: [returnPath, `keep@${BOUNCE_DOMAIN}`] };
    await failInserts('inbound_messages');
    await expect(client.sendMail({ envelope, raw: dsn })).rejects.toMatchObject({ responseCode: 451 });
    await allowInserts('inbound_messages');
    await client.sendMail({ envelope, raw: dsn });
    await waitFor(
      'the bounce recorded',
      () => eventsOf(messageId, 'bounced'),
      (events) => events.length > 0,
    );
    expect(await eventsOf(messageId, 'bounced')).toHaveLength(1);
    expect(await suppressed(to)).toBe(true);
  });

  const softBounceRows = async (email: string): Promise<string[]> =>
    (await h.db.query('SELECT message_id FROM soft_bounces WHERE email = $1 ORDER BY occurred_at', [email])).map(
      (r: { message_id: string }) => r.message_id,
    );

  it('counts a full mailbox (552 5.2.2) as a soft bounce, even reported as hard, instead of dropping it', async () => {
    const to = `full-${unique()}@example.org`;
    const first = await sent(to);
    await post({ messageId: first.messageId, type: 'bounced', reason: '552 5.2.2 Mailbox full' }).expect(202);
    expect(await h.statusOf(first.messageId)).toBe('bounced');
    expect(await suppressed(to)).toBe(false);
    expect(await softBounceRows(to)).toEqual([first.messageId]);

    const second = await sent(to);
    await post({ messageId: second.messageId, type: 'bounced', bounceType: 'hard', reason: '552 5.2.2 Mailbox full' }).expect(202);
    expect(await suppressed(to)).toBe(true);
  });

  /** A delivery status notification to the message's return path: `to` failed with this Status. */
  const reportFailure = async (message: { messageId: string; to: string; returnPath: string }, status: string, diagnostic?: string) => {
    const dsn = deliveryStatusReport({ to: message.returnPath, recipient: message.to, status, diagnostic });
    await client.sendMail({ envelope: { from: 'sender@origin.test', to: [message.returnPath] }, raw: dsn });
    await waitFor(
      `the bounce of ${message.messageId} recorded`,
      () => eventsOf(message.messageId, 'bounced'),
      (events) => events.length > 0,
    );
  };

  it('counts a bounce report that failed with a 4.x.x Status, or a 5.2.x one, as a soft bounce', async () => {
    const to = `dsn-soft-${unique()}@example.org`;
    const first = await sent(to);
    await reportFailure(first, '4.4.7');
    expect(await suppressed(to)).toBe(false);
    expect(await softBounceRows(to)).toEqual([first.messageId]);

    const second = await sent(to);
    await reportFailure(second, '5.2.2', '552 5.2.2 Mailbox full');
    expect(await suppressed(to)).toBe(true);
  });

  it('counts soft bounces within SOFT_BOUNCE_WINDOW_DAYS only, and purges those past it', async () => {
    const windowDays = h.t.app.get(AppConfigService).env.SOFT_BOUNCE_WINDOW_DAYS;
    const pastWindow = (messageId: string) =>
      h.db.query('UPDATE soft_bounces SET occurred_at = now() - make_interval(days => $2 + 1) WHERE message_id = $1', [
        messageId,
        windowDays,
      ]);
    const to = `window-${unique()}@example.org`;
    const first = await sent(to);
    await post({ messageId: first.messageId, type: 'bounced', bounceType: 'soft', reason: 'mailbox full' }).expect(202);
    await pastWindow(first.messageId);

    // The bounce past the window counts for nothing: this one is the first again.
    const second = await sent(to);
    await post({ messageId: second.messageId, type: 'bounced', bounceType: 'soft', reason: 'mailbox full' }).expect(202);
    expect(await suppressed(to)).toBe(false);

    // The purge keeps what is within the window and deletes what is past it, bounced again or not.
    const softBounces = h.t.app.get(SoftBounces);
    await softBounces.purge();
    expect(await softBounceRows(to)).toEqual([second.messageId]);
    await pastWindow(second.messageId);
    await softBounces.purge();
    expect(await softBounceRows(to)).toEqual([]);
  });
});
