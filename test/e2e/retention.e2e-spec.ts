import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { rawMessage } from '../support/raw-message';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { createTestApp, type TestApp } from '../support/test-app';
import { waitFor, waitForValue } from '../support/wait-for';

/** The value of one sample in Prometheus text (0 when the series is absent). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match?.[1] === name && wanted.every((pair) => (match[2] ?? '').split(/,(?=\w+=")/).includes(pair))) return Number(match[3]);
  }
  return 0;
}

const KINDS = ['message_content', 'inbound_messages', 'outbox_events', 'webhook_deliveries', 'attachment_blobs'];

// Storage does not grow forever: bodies, raw received mail, published events and finished webhook deliveries past
// the RETENTION_*_DAYS settings (defaults: 30, 7, 7, 30) are swept by the periodic sweeper; the rest is kept.
describe('Retention', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let receiver: Server;
  let db: DataSource;
  let adminKey: string;
  let inboundPort: number;
  const domain = 'retention.acme.test';
  const attachment = Buffer.alloc(64 * 1024, 'attachment bytes ').toString('base64');

  beforeAll(async () => {
    sink = await startSmtpSink({ parse: true });
    receiver = createServer((req, res) => {
      req.resume().on('end', () => res.writeHead(req.url === '/failing' ? 500 : 204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    inboundPort = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        INBOUND_SMTP_PORT: String(inboundPort),
        INBOUND_SMTP_HOST: '127.0.0.1',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        // A failing delivery stays pending (its next attempt an hour away).
        WEBHOOK_RETRY_SCHEDULE: '1h',
        RETENTION_SWEEP_INTERVAL_MS: '200',
        // One row a statement: what is past its retention takes several batches.
        RETENTION_BATCH_SIZE: '1',
      },
    });
    db = t.app.get(DataSource);
    const account = await createAccount(t, 'Retention');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
    await t.http
      .put(`/domains/${domain}`)
      .set(bearer(adminKey))
      .send({ forwarding: { info: ['ada@dest.test'] } })
      .expect(200);
  });

  afterAll(async () => {
    await t?.close();
    await sink?.close();
    receiver?.close();
  });

  const metrics = async () => (await t.http.get('/metrics').set(bearer(t.operatorKey)).expect(200)).text;
  const status = async (messageId: string) => (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body;

  async function send(subject: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({
        from: `news@${domain}`,
        to: ['reader@dest.test'],
        subject,
        html: `<p>${subject}</p>`,
        attachments: [{ filename: 'report.bin', content: attachment, contentType: 'application/octet-stream' }],
        ...extra,
      })
      .expect(200);
    return res.body.messageId;
  }

  async function forward(subject: string): Promise<{ inboundId: string; messageId: string }> {
    const client = nodemailer.createTransport({ host: '127.0.0.1', port: inboundPort, secure: false, ignoreTLS: true });
    const info = await client.sendMail({
      envelope: { from: 'sender@origin.test', to: [`info@${domain}`] },
      raw: rawMessage(`info@${domain}`, subject),
    });
    client.close();
    const inboundId = /queued as (inb_\w+)/.exec(info.response)![1];
    await sink.waitFor((m) => m.parsed?.subject === subject);
    const [row] = await db.query('SELECT id FROM messages WHERE inbound_message_id = $1', [inboundId]);
    await waitFor(
      'the forward to be sent',
      () => status(row.id),
      (s) => s.status === 'sent',
    );
    return { inboundId, messageId: row.id };
  }

  async function deliveriesOf(webhookId: string): Promise<{ id: string; status: string; payload: { messageId: string } }[]> {
    return (await t.http.get(`/email/webhooks/${webhookId}/deliveries`).set(bearer(adminKey)).expect(200)).body.deliveries;
  }

  it('shows the retention in GET /settings', async () => {
    const res = await t.http.get('/settings').set(bearer(adminKey)).expect(200);
    expect(res.body.retention).toEqual({
      message_content_days: 30,
      inbound_messages_days: 7,
      outbox_events_days: 7,
      webhook_deliveries_days: 30,
    });
  });

  it('sweeps what is past its retention in batches, keeps what is recent or not final, and a swept message still answers', async () => {
    const hooks = async (path: string) =>
      (
        await t.http
          .post('/email/webhooks')
          .set(bearer(adminKey))
          .send({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${path}`, events: ['sent'] })
          .expect(201)
      ).body.id as string;
    const okHook = await hooks('/ok');
    const failingHook = await hooks('/failing');

    const old = await send('old one');
    const recent = await send('recent one'); // its attachment is old one's: stored once, still referred to
    const loneBytes = Buffer.alloc(32 * 1024, 'only this message carries these bytes ');
    const lone = await send('lone one', {
      attachments: [{ filename: 'lone.bin', content: loneBytes.toString('base64'), contentType: 'application/octet-stream' }],
    });
    const loneHash = createHash('sha256').update(loneBytes).digest('hex');
    // Sent before links were recorded at sending (its message_links row removed below): retention records them.
    const tracked = await send('tracked one', {
      html: '<p><a href="https://shop.acme.test/sale">Sale</a></p>',
      tracking: { clicks: true },
    });
    const scheduled = await send('scheduled one', { scheduleFor: new Date(Date.now() + 86_400_000).toISOString() });
    for (const id of [old, recent, lone, tracked])
      await waitFor(
        `${id} to be sent`,
        () => status(id),
        (s) => s.status === 'sent',
      );
    const oldForward = await forward(`forwarded long ago ${Date.now()}`);
    const lateForward = await forward(`received long ago, forwarded lately ${Date.now()}`);
    // Each sent event: one delivery that succeeded, one pending its retry.
    for (const id of [old, recent]) {
      await waitForValue(`the deliveries of ${id}`, async () => {
        const ok = (await deliveriesOf(okHook)).find((d) => d.payload.messageId === id);
        const failing = (await deliveriesOf(failingHook)).find((d) => d.payload.messageId === id);
        return ok?.status === 'succeeded' && failing?.status === 'pending' && failing;
      });
    }
    const oldDelivery = (await deliveriesOf(okHook)).find((d) => d.payload.messageId === old)!;
    const attemptsOf = async (deliveryId: string) =>
      (await db.query('SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = $1', [deliveryId]))[0].n;
    expect(await attemptsOf(oldDelivery.id)).toBe(1);
    const before = await metrics();

    // Age the rows as time would.
    await db.query(`UPDATE messages SET updated_at = now() - interval '31 days' WHERE id = ANY($1)`, [[old, scheduled, lone, tracked]]);
    await db.query('DELETE FROM message_links WHERE message_id = $1', [tracked]);
    await db.query(`UPDATE attachment_blobs SET referenced_at = now() - interval '31 days'`);
    await db.query(`UPDATE messages SET updated_at = now() - interval '8 days' WHERE id = $1`, [oldForward.messageId]);
    await db.query(`UPDATE inbound_messages SET created_at = now() - interval '8 days' WHERE id = ANY($1)`, [
      [oldForward.inboundId, lateForward.inboundId],
    ]);
    await db.query(`UPDATE event_outbox SET published_at = now() - interval '8 days' WHERE payload->>'messageId' = ANY($1)`, [
      [old, oldForward.messageId],
    ]);
    await db.query(`UPDATE webhook_deliveries SET updated_at = now() - interval '31 days' WHERE payload->>'messageId' = $1`, [old]);

    // The periodic sweep takes exactly what was aged past its retention.
    const sweptSince = async () => {
      const now = await metrics();
      const count = (text: string, kind: string) => sample(text, 'mailroom_retention_swept_total', { kind });
      return Object.fromEntries(KINDS.map((kind) => [kind, count(now, kind) - count(before, kind)]));
    };
    await waitFor('the retention sweep', sweptSince, (swept) => KINDS.every((kind) => swept[kind] >= 1));
    await new Promise((resolve) => setTimeout(resolve, 600)); // a few more sweeps: nothing else goes
    expect(await sweptSince()).toEqual({
      message_content: 3,
      inbound_messages: 1,
      outbox_events: 2,
      webhook_deliveries: 1,
      attachment_blobs: 1,
    });

    // The swept message answers its status with every event, and says its body is gone; the others keep theirs.
    const oldStatus = await status(old);
    expect(oldStatus).toMatchObject({ messageId: old, status: 'sent' });
    expect(oldStatus.events.map((e: { type: string }) => e.type)).toEqual(['queued', 'sent']);
    expect(Date.parse(oldStatus.contentRemovedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect((await status(recent)).contentRemovedAt).toBeUndefined();
    expect(await status(scheduled)).toMatchObject({ status: 'scheduled' });
    expect((await status(scheduled)).contentRemovedAt).toBeUndefined();

    const bodies: { id: string; html: string | null; attachments: unknown[]; subject: string; to: unknown[] }[] = await db.query(
      `SELECT id, content->>'html' AS html, content->'attachments' AS attachments, content->>'subject' AS subject, content->'to' AS "to"
         FROM messages WHERE id = ANY($1)`,
      [[old, recent, scheduled]],
    );
    const body = Object.fromEntries(bodies.map((b) => [b.id, b]));
    expect(body[old]).toMatchObject({ html: null, attachments: [], subject: 'old one', to: [{ address: 'reader@dest.test' }] });
    expect(body[recent]).toMatchObject({ html: '<p>recent one</p>', subject: 'recent one' });
    expect(body[recent].attachments).not.toEqual([]);
    expect(body[scheduled].html).toBe('<p>scheduled one</p>');

    // The tracked message's click link still leads where it did, its HTML gone.
    const trackedMail = await sink.waitFor((m) => m.parsed?.subject === 'tracked one');
    const clickLink = /https?:\/\/[^"]+\/t\/c\/[\w.-]+/.exec(String(trackedMail.parsed?.html))![0];
    expect((await db.query(`SELECT content->>'html' AS html FROM messages WHERE id = $1`, [tracked]))[0].html).toBeNull();
    const click = await t.http.get(new URL(clickLink).pathname).expect(302);
    expect(click.headers.location).toBe('https://shop.acme.test/sale');

    // The swept bodies' attachment references go with them; bytes no message refers to any more are deleted.
    const references: { message_id: string }[] = await db.query(
      'SELECT message_id FROM message_attachments WHERE message_id = ANY($1) ORDER BY message_id',
      [[old, recent, lone, scheduled]],
    );
    expect(references.map((r) => r.message_id).sort()).toEqual([recent, scheduled].sort());
    const blobs: { hash: string }[] = await db.query('SELECT hash FROM attachment_blobs');
    expect(blobs.map((b) => b.hash)).not.toContain(loneHash);
    expect(blobs).toHaveLength(1);
    expect(await db.query('SELECT 1 FROM attachment_chunks WHERE hash = $1', [loneHash])).toEqual([]);

    // Raw received bytes go 7 days after the forward was final, not 7 days after receipt.
    const inbound: { id: string; has_source: boolean; swept: boolean; recipients: string[] }[] = await db.query(
      'SELECT id, source IS NOT NULL AS has_source, source_swept_at IS NOT NULL AS swept, recipients FROM inbound_messages WHERE id = ANY($1)',
      [[oldForward.inboundId, lateForward.inboundId]],
    );
    expect(Object.fromEntries(inbound.map((i) => [i.id, [i.has_source, i.swept, i.recipients]]))).toEqual({
      [oldForward.inboundId]: [false, true, [`info@${domain}`]],
      [lateForward.inboundId]: [true, false, [`info@${domain}`]],
    });
    expect((await status(oldForward.messageId)).status).toBe('sent');

    // Published events past 7 days go; the delivery log loses the finished delivery, keeps the pending one.
    const outbox: { message_id: string }[] = await db.query(
      `SELECT payload->>'messageId' AS message_id FROM event_outbox WHERE payload->>'messageId' = ANY($1)`,
      [[old, recent, oldForward.messageId]],
    );
    expect(outbox.map((o) => o.message_id)).toEqual([recent]);
    expect((await deliveriesOf(okHook)).map((d) => d.payload.messageId)).not.toContain(old);
    expect((await deliveriesOf(okHook)).map((d) => d.payload.messageId)).toContain(recent);
    expect((await deliveriesOf(failingHook)).filter((d) => d.payload.messageId === old).map((d) => d.status)).toEqual(['pending']);
    expect(await attemptsOf(oldDelivery.id)).toBe(0);
  });
});
