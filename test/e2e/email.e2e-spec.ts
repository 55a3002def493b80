import { randomBytes } from 'node:crypto';
import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { ReturnPaths } from '../../src/email/return-path';
import { QueueName } from '../../src/queue/queue.constants';
import { TestDnsServer, startDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

describe('email sending', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let dns: TestDnsServer;
  let adminKey: string;
  const domain = 'mail.acme.test';
  const unique = () => randomBytes(6).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    dns = await startDnsServer();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        EMAIL_RETRY_FIRST_DELAY_MS: '200',
        EMAIL_SWEEP_INTERVAL_MS: '300',
        EMAIL_SWEEP_AFTER_MS: '500',
      },
    });
    const account = await createAccount(t, 'Acme');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain, dns);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await dns.close();
  });

  const send = (body: Record<string, unknown>, key = adminKey, path = '/email/send') =>
    t.http
      .post(path)
      .set(bearer(key))
      .send({ from: `Acme <hello@${domain}>`, ...body });

  async function statusOf(messageId: string) {
    const res = await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200);
    return res.body as { status: string; events: { type: string; timestamp: string; recipient?: string; detail?: string }[] };
  }

  async function waitForStatus(messageId: string, status: string) {
    for (let i = 0; i < 200; i++) {
      const current = await statusOf(messageId);
      if (current.status === status) return current;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`message ${messageId} never reached ${status}: ${JSON.stringify(await statusOf(messageId))}`);
  }

  it('delivers what was asked: envelope, headers, bodies, attachments byte for byte, unicode', async () => {
    const subject = `Grüße 👋 ${unique()}`;
    const binary = randomBytes(70_000);
    const res = await send({
      to: ['Ada Lovelace <ada@example.org>'],
      cc: 'grace@example.org',
      bcc: ['hidden@example.org'],
      subject,
      text: 'Hallo Wörld — ünïcode ✓',
      html: '<p>Hallo <b>Wörld</b> ✓</p>',
      headers: { 'Reply-To': 'support@acme.test', 'X-Campaign': 'spring-2026' },
      attachments: [
        { filename: 'data.bin', content: binary.toString('base64'), contentType: 'application/octet-stream' },
        { filename: 'notes.txt', content: Buffer.from('plain notes\n').toString('base64'), contentType: 'text/plain' },
      ],
    }).expect(200);
    expect(res.body).toEqual({ success: true, messageId: expect.stringMatching(/^msg_/), status: 'queued' });

    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    // The VERP return path (D-31): bounces come back to Mailroom, naming the message.
    expect(mail.envelope.mailFrom).toBe(t.app.get(ReturnPaths).address(res.body.messageId));
    expect(mail.envelope.mailFrom).toMatch(/^bounces\+[a-z2-7]+-[a-z2-7]+@mailroom\.test$/);
    expect(mail.envelope.rcptTo.sort()).toEqual(['ada@example.org', 'grace@example.org', 'hidden@example.org']);
    const parsed = mail.parsed!;
    expect(parsed.from?.value).toEqual([{ name: 'Acme', address: `hello@${domain}` }]);
    expect(parsed.headers.get('to')).toMatchObject({ value: [{ name: 'Ada Lovelace', address: 'ada@example.org' }] });
    expect(parsed.headers.get('cc')).toMatchObject({ value: [{ address: 'grace@example.org' }] });
    expect(mail.raw.toString()).not.toMatch(/hidden@example\.org/);
    expect(parsed.replyTo?.text).toBe('support@acme.test');
    expect(parsed.headers.get('x-campaign')).toBe('spring-2026');
    expect(parsed.text?.trim()).toBe('Hallo Wörld — ünïcode ✓');
    expect(parsed.html).toContain('<p>Hallo <b>Wörld</b> ✓</p>');
    expect(parsed.attachments.map((a) => a.filename)).toEqual(['data.bin', 'notes.txt']);
    expect(parsed.attachments[0].content.equals(binary)).toBe(true);
    expect(parsed.attachments[1].content.toString()).toBe('plain notes\n');
    expect(parsed.messageId).toMatch(new RegExp(`@${domain.replace(/\./g, '\\.')}>$`));

    const status = await waitForStatus(res.body.messageId, 'sent');
    expect(status.events.map((e) => e.type)).toEqual(['queued', 'sent']);
    expect(status.events.every((e) => !Number.isNaN(Date.parse(e.timestamp)))).toBe(true);
  });

  it('signs with the domain DKIM key, verified independently (mailauth) against DNS', async () => {
    const subject = `dkim ${unique()}`;
    await send({ to: 'ada@example.org', subject, text: 'signed' }).expect(200);
    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    const dkim = await dns.dkimResults(mail.raw, `hello@${domain}`);
    expect(dkim).toHaveLength(1);
    expect(dkim[0]).toMatchObject({ signingDomain: domain, selector: 'mr1', status: { result: 'pass' } });
  });

  it('takes the same message on /api/email/send and /v1/send with X-Api-Key', async () => {
    const { key } = await createKey(t, adminKey, { keyType: 'usage', permissions: ['email.send'] });
    const first = `api ${unique()}`;
    const second = `v1 ${unique()}`;
    await send({ to: 'ada@example.org', subject: first, text: 'x' }, key, '/api/email/send').expect(200);
    await t.http
      .post('/v1/send')
      .set('X-Api-Key', key)
      .send({ from: `hello@${domain}`, to: 'ada@example.org', subject: second, text: 'x' })
      .expect(200);
    await sink.waitFor((m) => m.parsed?.subject === first);
    await sink.waitFor((m) => m.parsed?.subject === second);
  });

  it('renders stored templates: values, sections, loops, HTML escaping', async () => {
    const name = `receipt-${unique()}`;
    await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({
        name,
        subject: 'Receipt for {{name}}',
        html: '<p>Hi {{name}}</p>{{#vip}}<p>VIP</p>{{/vip}}<ul>{{#items}}<li>{{title}}</li>{{/items}}</ul>',
        text: 'Hi {{name}}{{#items}} - {{title}}{{/items}}',
      })
      .expect(201);
    const marker = unique();
    await send({
      to: 'ada@example.org',
      template: name,
      variables: { name: `<script>${marker}</script>`, vip: true, items: [{ title: 'Tea' }, { title: 'Cake' }] },
    }).expect(200);
    const mail = await sink.waitFor((m) => m.parsed?.subject === `Receipt for <script>${marker}</script>`);
    expect(mail.parsed!.html).toContain(`<p>Hi &lt;script&gt;${marker}&lt;/script&gt;</p><p>VIP</p><ul><li>Tea</li><li>Cake</li></ul>`);
    expect(mail.parsed!.text).toContain(`Hi <script>${marker}</script> - Tea - Cake`);

    const missing = await send({ to: 'ada@example.org', template: 'no-such-template' });
    expect(missing.status).toBe(404);
  });

  it('refuses bad recipients, header injection and unverified senders', async () => {
    const bad = await send({ to: ['ada@example.org', 'not-an-address'], subject: 's', text: 't' }).expect(400);
    expect(bad.body.error).toMatchObject({ code: 'INVALID_RECIPIENT', details: { field: 'to[1]', value: 'not-an-address' } });

    for (const headers of [{ 'X-Test': 'a\r\nBcc: victim@example.org' }, { 'X-Test\r\nBcc': 'victim@example.org' }, { Subject: 'other' }]) {
      const res = await send({ to: 'ada@example.org', subject: 's', text: 't', headers }).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    const subjectInjection = await send({ to: 'ada@example.org', subject: 'Hi\r\nBcc: victim@example.org', text: 't' }).expect(400);
    expect(subjectInjection.body.error.code).toBe('VALIDATION_FAILED');
    await send({ to: 'Eve\r\nBcc: victim@example.org <ada@example.org>', subject: 's', text: 't' }).expect(400);

    const unverified = await send({ from: 'me@not-mine.test', to: 'ada@example.org', subject: 's', text: 't' }).expect(403);
    expect(unverified.body.error.code).toBe('DOMAIN_NOT_VERIFIED');

    const many = Array.from({ length: 51 }, (_, i) => `r${i}@example.org`);
    await send({ to: many.slice(0, 30), cc: many.slice(30), subject: 's', text: 't' }).expect(400);
    const tooFar = new Date(Date.now() + 31 * 24 * 3600 * 1000).toISOString();
    await send({ to: 'ada@example.org', subject: 's', text: 't', scheduleFor: tooFar }).expect(400);
    await send({ to: 'ada@example.org', subject: 's' }).expect(400);
    await send({ to: 'ada@example.org', subject: 's', text: 't', priority: 'urgent' }).expect(400);
    const big = await send({ to: 'ada@example.org', subject: 's', text: 'x'.repeat(10 * 1024 * 1024 + 1) }).expect(413);
    expect(big.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(sink.messages.some((m) => m.envelope.rcptTo.includes('victim@example.org'))).toBe(false);
  });

  it('holds the from domain to the key domain_restrictions', async () => {
    const { key } = await createKey(t, adminKey, { keyType: 'usage', restrictions: { domain_restrictions: ['other.test'] } });
    const res = await send({ to: 'ada@example.org', subject: 's', text: 't' }, key).expect(403);
    expect(res.body.error.code).toBe('DOMAIN_NOT_ALLOWED');
  });

  it('answers 404 for another account’s message', async () => {
    const res = await send({ to: 'ada@example.org', subject: `own ${unique()}`, text: 't' }).expect(200);
    const other = await createAccount(t, 'Other');
    await t.http.get(`/email/status/${res.body.messageId}`).set(bearer(other.adminKey)).expect(404);
    await t.http.delete(`/email/scheduled/${res.body.messageId}`).set(bearer(other.adminKey)).expect(404);
  });

  it('holds scheduled mail until its time and never sends a cancelled one', async () => {
    const cancelledSubject = `cancelled ${unique()}`;
    const laterSubject = `later ${unique()}`;
    const cancelled = await send({
      to: 'ada@example.org',
      subject: cancelledSubject,
      text: 'x',
      scheduleFor: new Date(Date.now() + 2500).toISOString(),
    }).expect(200);
    expect(cancelled.body.status).toBe('scheduled');
    const later = await send({
      to: 'ada@example.org',
      subject: laterSubject,
      text: 'x',
      scheduleFor: new Date(Date.now() + 3500).toISOString(),
    }).expect(200);
    expect(later.body.status).toBe('scheduled');

    const cancel = await t.http.delete(`/email/scheduled/${cancelled.body.messageId}`).set(bearer(adminKey)).expect(200);
    expect(cancel.body.status).toBe('cancelled');
    await t.http.delete(`/email/scheduled/${cancelled.body.messageId}`).set(bearer(adminKey)).expect(409);
    expect((await statusOf(later.body.messageId)).status).toBe('scheduled');
    expect(sink.messages.some((m) => m.parsed?.subject === laterSubject)).toBe(false);

    await sink.waitFor((m) => m.parsed?.subject === laterSubject);
    const sent = await waitForStatus(later.body.messageId, 'sent');
    expect(sent.events.map((e) => e.type)).toEqual(['queued', 'scheduled', 'sent']);
    expect(sink.messages.some((m) => m.parsed?.subject === cancelledSubject)).toBe(false);
    expect((await statusOf(cancelled.body.messageId)).events.map((e) => e.type)).toEqual(['queued', 'scheduled', 'cancelled']);

    const past = await send({ to: 'ada@example.org', subject: `past ${unique()}`, text: 'x', scheduleFor: '2020-01-01T00:00:00Z' }).expect(
      200,
    );
    expect(past.body.status).toBe('queued');
  });

  it('sends an idempotent request once and replays the first response', async () => {
    const subject = `idempotent ${unique()}`;
    const key = `order-${unique()}`;
    const body = { from: `hello@${domain}`, to: 'ada@example.org', subject, text: 'once' };
    const first = await t.http.post('/email/send').set(bearer(adminKey)).set('Idempotency-Key', key).send(body).expect(200);
    const replay = await t.http.post('/email/send').set(bearer(adminKey)).set('Idempotency-Key', key).send(body).expect(200);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const conflict = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .set('Idempotency-Key', key)
      .send({ ...body, text: 'other' })
      .expect(409);
    expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');

    await sink.waitFor((m) => m.parsed?.subject === subject);
    const after = `after ${unique()}`;
    await send({ to: 'ada@example.org', subject: after, text: 'x' }).expect(200);
    await sink.waitFor((m) => m.parsed?.subject === after);
    expect(sink.messages.filter((m) => m.parsed?.subject === subject)).toHaveLength(1);
  });

  it('lets only one of two concurrent requests with the same Idempotency-Key act', async () => {
    const subject = `concurrent ${unique()}`;
    const key = `order-${unique()}`;
    const body = { from: `hello@${domain}`, to: 'ada@example.org', subject, text: 'once' };
    const post = () => t.http.post('/email/send').set(bearer(adminKey)).set('Idempotency-Key', key).send(body);
    const [a, b] = await Promise.all([post(), post()]);
    const statuses = [a.status, b.status].sort();
    expect([
      [200, 200],
      [200, 409],
    ]).toContainEqual(statuses);
    const ids = new Set([a, b].filter((r) => r.status === 200).map((r) => r.body.messageId));
    expect(ids.size).toBe(1);
    for (const r of [a, b].filter((r) => r.status === 409)) expect(r.body.error.code).toBe('IDEMPOTENCY_CONFLICT');

    await sink.waitFor((m) => m.parsed?.subject === subject);
    const after = `after ${unique()}`;
    await send({ to: 'ada@example.org', subject: after, text: 'x' }).expect(200);
    await sink.waitFor((m) => m.parsed?.subject === after);
    expect(sink.messages.filter((m) => m.parsed?.subject === subject)).toHaveLength(1);
  });

  it('retries after 451 and ends sent', async () => {
    const subject = `retry ${unique()}`;
    sink.failNext(1, 451);
    const res = await send({ to: 'ada@example.org', subject, text: 'x' }).expect(200);
    await sink.waitFor((m) => m.parsed?.subject === subject);
    const status = await waitForStatus(res.body.messageId, 'sent');
    expect(status.events.map((e) => e.type)).toEqual(['queued', 'deferred', 'sent']);
    expect(status.events[1].detail).toContain('451');
  });

  it('marks a 550 bounced and suppresses the address; later sends drop it', async () => {
    const victim = `gone-${unique()}@example.org`;
    sink.rejectRecipient(victim, 550);
    const res = await send({ to: victim, subject: `bounce ${unique()}`, text: 'x' }).expect(200);
    const status = await waitForStatus(res.body.messageId, 'bounced');
    expect(status.events).toContainEqual(
      expect.objectContaining({ type: 'bounced', recipient: victim, detail: expect.stringContaining('550') }),
    );
    sink.clearRejections();

    const check = await t.http.get('/email/suppression/check').query({ email: victim }).set(bearer(adminKey)).expect(200);
    expect(check.body).toMatchObject({ suppressed: true, reason: 'bounced' });

    const all = await send({ to: victim, subject: 's', text: 'x' }).expect(422);
    expect(all.body.error.code).toBe('ALL_RECIPIENTS_SUPPRESSED');
    const subject = `partial ${unique()}`;
    const partial = await send({ to: [victim, 'ada@example.org'], subject, text: 'x' }).expect(200);
    expect(partial.body.suppressed).toEqual([victim]);
    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    expect(mail.envelope.rcptTo).toEqual(['ada@example.org']);
  });

  it('loses nothing when Redis is unreachable between commit and enqueue', async () => {
    const queue = t.app.get<Queue>(getQueueToken(QueueName.Email));
    const subject = `outage ${unique()}`;
    queue.client.disconnect();
    try {
      const res = await send({ to: 'ada@example.org', subject, text: 'durable' }).expect(200);
      expect(res.body.status).toBe('queued');
      expect(queue.client.status).not.toBe('ready');
    } finally {
      await queue.client.connect();
    }
    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    expect(mail.parsed!.text?.trim()).toBe('durable');
  });

  it('lists the email queue on Bull Board behind operator basic auth', async () => {
    await t.http.get('/admin/queues/api/queues').expect(401);
    await t.http.get('/admin/queues/api/queues').auth('ops', adminKey).expect(403); // a tenant's key
    const res = await t.http.get('/admin/queues/api/queues').auth('ops', t.operatorKey).expect(200);
    expect(res.body.queues.map((q: { name: string }) => q.name)).toContain('email');
  });

  it('documents the email routes in the OpenAPI description', async () => {
    const res = await t.http.get('/docs-json').expect(200);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining(['/email/send', '/api/email/send', '/v1/send', '/email/status/{messageId}', '/email/scheduled/{messageId}']),
    );
    expect(res.body.paths['/v1/send'].post.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header' }));
  });
});
