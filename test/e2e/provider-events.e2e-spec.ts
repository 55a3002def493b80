import { createHash, randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { ProviderWebhookIds } from '../../src/provider-events/provider-webhook-ids.store';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-env';
import { postProviderEvents, providerSigner } from '../support/provider-events';

interface Status {
  status: string;
  events: { type: string; recipient?: string; detail?: string; timestamp: string }[];
}

const SECRET = 'provider-secret-ünïcode';

// The delivery provider's signed events (D-24): signatures, status moves, suppression, replays. Messages reach
// `sent` through a real SMTP sink; events are signed with the standardwebhooks package as a provider would.
describe('provider events', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  const domain = 'provider.acme.test';
  const unique = () => randomBytes(4).toString('hex');
  const provider = providerSigner(SECRET);

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { PROVIDER_WEBHOOK_SECRET: SECRET, SMTP_URL: sink.url } });
    let accountId: string;
    ({ accountId, adminKey } = await createAccount(t, 'Provider'));
    await createVerifiedDomain(t, accountId, domain);
  });

  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const status = async (messageId: string): Promise<Status> =>
    (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body as Status;

  const waitForStatus = async (messageId: string, wanted: string, timeoutMs = 10_000): Promise<Status> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const current = await status(messageId);
      if (current.status === wanted) return current;
      if (Date.now() > deadline) throw new Error(`${messageId} is ${current.status}, not ${wanted}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  /** A message handed to the sink: its id and the Message-ID the recipient sees. */
  const sentMessage = async (to: string | string[] = `ada.${unique()}@example.org`) => {
    const subject = `provider ${unique()}`;
    const res = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to, subject, text: 'hi' })
      .expect(200);
    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    await waitForStatus(res.body.messageId, 'sent');
    return { messageId: res.body.messageId as string, headerMessageId: mail.parsed!.messageId!, to };
  };

  const signed = (payload: string, options: { id?: string; at?: Date; signer?: Webhook } = {}) => {
    const id = options.id ?? `evt_${unique()}`;
    const at = options.at ?? new Date();
    return {
      'Content-Type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': (options.signer ?? provider).sign(id, at, payload),
    };
  };

  const post = (body: unknown, options: { id?: string; at?: Date; signer?: Webhook } = {}) => {
    const payload = JSON.stringify(body);
    return t.http.post('/provider/events').set(signed(payload, options)).send(payload);
  };

  const expectSignatureRefused = (res: { status: number; body: { error: { code: string }; documentation: string } }) => {
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('SIGNATURE_INVALID');
    expect(res.body.documentation).toContain('/docs#');
  };

  describe('signature', () => {
    const body = { messageId: 'msg_unknown', type: 'delivered' };

    it('refuses a call without the Standard Webhooks headers', async () => {
      const res = await t.http.post('/provider/events').set('Content-Type', 'application/json').send(JSON.stringify(body));
      expectSignatureRefused(res);
      expect(res.body.error.message).toContain('Missing required headers');
    });

    it('refuses a call signed with another secret', async () => {
      expectSignatureRefused(await post(body, { signer: new Webhook(Buffer.from('not-the-secret', 'utf8'), { format: 'raw' }) }));
    });

    it('refuses the secret read as Latin-1 instead of UTF-8', async () => {
      expectSignatureRefused(await post(body, { signer: new Webhook(SECRET, { format: 'raw' }) }));
    });

    it('refuses a stale timestamp even when the signature matches it', async () => {
      const res = await post(body, { at: new Date(Date.now() - 6 * 60 * 1000) });
      expectSignatureRefused(res);
      expect(res.body.error.message).toContain('too old');
    });

    it('refuses a body other than the one signed', async () => {
      const headers = signed(JSON.stringify(body));
      const res = await t.http
        .post('/provider/events')
        .set(headers)
        .send(JSON.stringify({ ...body, type: 'bounced' }));
      expectSignatureRefused(res);
    });

    it('accepts a signed call, and checks the signature before the body', async () => {
      expect((await post(body)).status).toBe(202);
      // An unsigned bad body is 401, not 400: the caller learns nothing about the shape.
      expectSignatureRefused(await t.http.post('/provider/events').set('Content-Type', 'application/json').send('{"nonsense":1}'));
    });
  });

  it('moves a sent message to delivered, after queued and sent in its status', async () => {
    const { messageId, to } = await sentMessage();
    const res = await post({ messageId, type: 'delivered', recipient: to, reason: '250 2.0.0 delivered' }).expect(202);
    expect(res.body).toEqual({ received: 1, applied: 1, ignored: 0 });
    const after = await status(messageId);
    expect(after.status).toBe('delivered');
    expect(after.events.map((e) => e.type)).toEqual(['queued', 'sent', 'delivered']);
    expect(after.events[2]).toMatchObject({ recipient: to, detail: '250 2.0.0 delivered' });
  });

  it('bounces and suppresses the recipient, so that a new send drops it', async () => {
    const { messageId, to } = await sentMessage();
    await post({ messageId, type: 'bounced', recipient: to, reason: '550 5.1.1 no such user' }).expect(202);
    const after = await status(messageId);
    expect(after.status).toBe('bounced');
    expect(after.events[after.events.length - 1]).toMatchObject({ type: 'bounced', recipient: to, detail: '550 5.1.1 no such user' });

    const check = await t.http.get('/email/suppression/check').query({ email: to }).set(bearer(adminKey)).expect(200);
    expect(check.body).toMatchObject({ email: to, suppressed: true, reason: 'bounced' });

    const other = `other.${unique()}@example.org`;
    const send = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to: [to, other], subject: 'again', text: 'hi' })
      .expect(200);
    expect(send.body.suppressed).toEqual([to]);
    const alone = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to, subject: 'again', text: 'hi' });
    expect(alone.status).toBe(422);
    expect(alone.body.error.code).toBe('ALL_RECIPIENTS_SUPPRESSED');
  });

  it('records a complaint and suppresses the recipient as complained', async () => {
    const { messageId, to } = await sentMessage();
    await post({ messageId, type: 'complained', recipient: to }).expect(202);
    const after = await status(messageId);
    expect(after.status).toBe('sent');
    expect(after.events.map((e) => e.type)).toEqual(['queued', 'sent', 'complained']);
    const check = await t.http.get('/email/suppression/check').query({ email: to }).set(bearer(adminKey)).expect(200);
    expect(check.body).toMatchObject({ suppressed: true, reason: 'complained' });
  });

  it('finds the message by its RFC Message-ID, with or without angle brackets', async () => {
    const { messageId, headerMessageId } = await sentMessage();
    expect(headerMessageId).toMatch(/^<.+@provider\.acme\.test>$/);
    await post({ messageId: headerMessageId, type: 'delivered' }).expect(202, { received: 1, applied: 1, ignored: 0 });
    await post({ messageId: headerMessageId.slice(1, -1), type: 'opened' }).expect(202, { received: 1, applied: 1, ignored: 0 });
    const after = await status(messageId);
    expect(after.status).toBe('delivered');
    expect(after.events.map((e) => e.type)).toEqual(['queued', 'sent', 'delivered', 'opened']);
  });

  it('answers 202 and ignores an event of an unknown message', async () => {
    const res = await post({ messageId: 'msg_doesNotExist0000000000', type: 'bounced', recipient: 'ada@example.org' }).expect(202);
    expect(res.body).toEqual({ received: 1, applied: 0, ignored: 1 });
    const check = await t.http.get('/email/suppression/check').query({ email: 'ada@example.org' }).set(bearer(adminKey)).expect(200);
    expect(check.body.suppressed).toBe(false);
  });

  it('applies a replayed webhook-id once', async () => {
    const { messageId } = await sentMessage();
    const id = `evt_${unique()}`;
    const body = { messageId, type: 'deferred', reason: '421 try later' };
    await post(body, { id }).expect(202, { received: 1, applied: 1, ignored: 0 });
    // The provider retries with the same id and a fresh signature.
    await post(body, { id }).expect(202, { received: 1, applied: 0, ignored: 1, duplicate: true });
    const after = await status(messageId);
    expect(after.events.filter((e) => e.type === 'deferred')).toHaveLength(1);
    expect(after.status).toBe('sent'); // a provider deferral does not make our worker send again
  });

  describe('each webhook-id applied once, in PostgreSQL', () => {
    const idHash = (id: string) => createHash('sha256').update(id).digest('hex');
    const rowOf = async (id: string): Promise<{ state: string; expired: boolean } | undefined> =>
      (
        await t.app
          .get(DataSource)
          .query('SELECT state, expires_at <= now() AS expired FROM provider_webhook_ids WHERE id_hash = $1', [idHash(id)])
      )[0];
    const deliveredEvents = async (messageId: string) => (await status(messageId)).events.filter((e) => e.type === 'delivered');

    it('answers a retry as a duplicate after Redis forgot everything but the queues', async () => {
      const { messageId, to } = await sentMessage();
      const id = `evt_${unique()}`;
      const body = { messageId, type: 'delivered', recipient: to };
      await post(body, { id }).expect(202, { received: 1, applied: 1, ignored: 0 });

      // As a Redis restart without persistence (or from a snapshot older than the call) would.
      const redis = new Redis(TEST_REDIS_URL);
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${t.env.REDIS_KEY_PREFIX}*`, 'COUNT', 1000);
          cursor = next;
          const forgotten = keys.filter((key) => !key.startsWith(`${t.env.REDIS_KEY_PREFIX}bull:`));
          if (forgotten.length) await redis.unlink(...forgotten);
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }

      await post(body, { id }).expect(202, { received: 1, applied: 0, ignored: 1, duplicate: true });
      expect(await deliveredEvents(messageId)).toHaveLength(1);
      expect(await rowOf(id)).toEqual({ state: 'applied', expired: false });
    });

    it('applies a call once when its retries race it', async () => {
      const { messageId, to } = await sentMessage();
      const id = `evt_${unique()}`;
      const answers = await Promise.all(Array.from({ length: 6 }, () => post({ messageId, type: 'delivered', recipient: to }, { id })));
      const applied = answers.filter((res) => res.status === 202 && res.body.applied === 1);
      expect(applied).toHaveLength(1);
      for (const res of answers.filter((r) => r !== applied[0])) {
        if (res.status === 202) expect(res.body.duplicate).toBe(true);
        else {
          expect(res.status).toBe(409);
          expect(res.headers['retry-after']).toBe('5');
        }
      }
      expect(await deliveredEvents(messageId)).toHaveLength(1);
    });

    it('answers 409 to an id an earlier version left pending, and takes it over once it lapses', async () => {
      const { messageId, to } = await sentMessage();
      const id = `evt_${unique()}`;
      const body = { messageId, type: 'delivered', recipient: to };
      const dataSource = t.app.get(DataSource);
      await dataSource.query(
        `INSERT INTO provider_webhook_ids (id_hash, state, claim, expires_at) VALUES ($1, 'pending', gen_random_uuid(), now() + interval '1 minute')`,
        [idHash(id)],
      );
      const busy = await post(body, { id }).expect(409);
      expect(busy.body.error.code).toBe('CONFLICT');
      expect(busy.headers['retry-after']).toBe('5');
      expect(await deliveredEvents(messageId)).toHaveLength(0);

      await dataSource.query(`UPDATE provider_webhook_ids SET expires_at = now() - interval '1 second' WHERE id_hash = $1`, [idHash(id)]);
      await post(body, { id }).expect(202, { received: 1, applied: 1, ignored: 0 });
      expect(await deliveredEvents(messageId)).toHaveLength(1);
      expect(await rowOf(id)).toEqual({ state: 'applied', expired: false });
    });

    it('purges ids past their time', async () => {
      const webhookIds = t.app.get(ProviderWebhookIds);
      const { messageId, to } = await sentMessage();
      const id = `evt_${unique()}`;
      await post({ messageId, type: 'delivered', recipient: to }, { id }).expect(202);
      expect(await rowOf(id)).toEqual({ state: 'applied', expired: false });

      await t.app
        .get(DataSource)
        .query(`UPDATE provider_webhook_ids SET expires_at = now() - interval '1 second' WHERE id_hash = $1`, [idHash(id)]);
      await webhookIds.purgeExpired();
      expect(await rowOf(id)).toBeUndefined();
    });
  });

  it('takes an array of events, and {events: [...]}, in the order of their times', async () => {
    const { messageId, to } = await sentMessage();
    // Times between `sent` and now (earlier ones would be listed at the time of `sent`), given out of order.
    const sentAt = Date.parse((await status(messageId)).events[1].timestamp);
    const at = (ms: number) => new Date(sentAt + ms).toISOString();
    const res = await post([
      { messageId, type: 'clicked', url: 'https://example.org/pricing', timestamp: at(3) },
      { messageId, type: 'delivered', recipient: to, timestamp: at(1) },
      { messageId, type: 'opened', timestamp: at(2) },
    ]).expect(202);
    expect(res.body).toEqual({ received: 3, applied: 3, ignored: 0 });
    const wrapped = {
      events: [
        { messageId, type: 'opened' },
        { messageId: 'msg_unknown', type: 'opened' },
      ],
    };
    await post(wrapped).expect(202, { received: 2, applied: 1, ignored: 1 });

    const after = await status(messageId);
    expect(after.status).toBe('delivered');
    expect(after.events.map((e) => e.type)).toEqual(['queued', 'sent', 'delivered', 'opened', 'clicked', 'opened']);
    expect(after.events[4]).toMatchObject({ recipient: to, detail: 'https://example.org/pricing' });
    const times = after.events.map((e) => Date.parse(e.timestamp));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('never lists a provider event before sent, nor in the future', async () => {
    const { messageId } = await sentMessage();
    const sentAt = Date.parse((await status(messageId)).events[1].timestamp);
    await post([
      { messageId, type: 'delivered', timestamp: new Date(sentAt - 3600_000).toISOString() },
      { messageId, type: 'opened', timestamp: new Date(Date.now() + 3600_000).toISOString() },
    ]).expect(202);
    const after = await status(messageId);
    expect(after.events.map((e) => e.type)).toEqual(['queued', 'sent', 'delivered', 'opened']);
    expect(Date.parse(after.events[2].timestamp)).toBeGreaterThanOrEqual(sentAt);
    expect(Date.parse(after.events[3].timestamp)).toBeLessThanOrEqual(Date.now());
  });

  it('refuses a bad entry naming it, and applies nothing of the call', async () => {
    const { messageId } = await sentMessage();
    const res = await post([
      { messageId, type: 'delivered' },
      { messageId, type: 'exploded' },
      { messageId, type: 'clicked', url: 'javascript:alert(1)', extra: true },
    ]).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    const fields = (res.body.error.details.fields as { field: string }[]).map((f) => f.field);
    expect(fields).toEqual(expect.arrayContaining(['events[1].type', 'events[2].url', 'events[2].extra']));
    expect(fields).not.toContain('events[0].type');
    expect((await status(messageId)).status).toBe('sent');

    const tooMany = Array.from({ length: 1001 }, () => ({ messageId, type: 'opened' }));
    const big = await post(tooMany).expect(400);
    expect(big.body.error.details.fields[0].field).toBe('events');
  });

  it('bounces a message with several recipients only once each has bounced; a late delivered changes nothing', async () => {
    const [ada, bob] = [`ada.${unique()}@example.org`, `bob.${unique()}@example.org`];
    const { messageId } = await sentMessage([ada, bob]);

    // Bounces and complaints must say whom they are about, and it must be a recipient of the message.
    await post([
      { messageId, type: 'bounced' },
      { messageId, type: 'bounced', recipient: `eve.${unique()}@example.org` },
    ]).expect(202, { received: 2, applied: 0, ignored: 2 });

    await post({ messageId, type: 'delivered', recipient: bob }).expect(202);
    await post({ messageId, type: 'bounced', recipient: ada.toUpperCase() }).expect(202, { received: 1, applied: 1, ignored: 0 });
    expect((await status(messageId)).status).toBe('delivered');

    await post({ messageId, type: 'bounced', recipient: bob }).expect(202);
    await post({ messageId, type: 'delivered', recipient: ada }).expect(202, { received: 1, applied: 1, ignored: 0 });
    const after = await status(messageId);
    expect(after.status).toBe('bounced');
    expect(after.events.map((e) => `${e.type} ${e.recipient ?? ''}`.trim())).toEqual([
      'queued',
      'sent',
      `delivered ${bob}`,
      `bounced ${ada}`,
      `bounced ${bob}`,
      `delivered ${ada}`,
    ]);
    for (const address of [ada, bob]) {
      const check = await t.http.get('/email/suppression/check').query({ email: address }).set(bearer(adminKey)).expect(200);
      expect(check.body).toMatchObject({ suppressed: true, reason: 'bounced' });
    }
  });

  it('documents the route, its body forms and its signing in /docs-json', async () => {
    const doc = (await t.http.get('/docs-json').expect(200)).body;
    const route = doc.paths['/provider/events'].post;
    expect(route.description).toContain('PROVIDER_WEBHOOK_SECRET');
    expect(route.requestBody.content['application/json'].schema.oneOf).toHaveLength(3);
    expect(route.responses['202'].content['application/json'].schema.$ref).toContain('ProviderEventsResultDto');
    expect(route.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['webhook-id', 'webhook-timestamp', 'webhook-signature']),
    );
  });

  it('bounces a message whose recipients bounce at the same time', async () => {
    const recipients = Array.from({ length: 4 }, (_, i) => `r${i}.${unique()}@example.org`);
    const { messageId } = await sentMessage(recipients);
    await Promise.all(recipients.map((recipient) => post({ messageId, type: 'bounced', recipient }).expect(202)));
    expect((await status(messageId)).status).toBe('bounced');
  });
});

// Each call is applied in one transaction holding one pooled connection: everything it reads runs on that connection,
// so as many concurrent calls as the pool has connections still finish (a second connection each would wait for ever).
describe('provider events with a pool of two connections', () => {
  let t: TestApp;
  const provider = providerSigner(SECRET);

  beforeAll(async () => {
    t = await createTestApp({ env: { PROVIDER_WEBHOOK_SECRET: SECRET, DATABASE_POOL_SIZE: '2' } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('applies more concurrent calls than the pool has connections', async () => {
    const calls = Array.from({ length: 4 }, (_, i) =>
      postProviderEvents(t.http, provider, { messageId: `msg_unknownPool${i}`, type: 'opened' }),
    );
    for (const res of await Promise.all(calls)) expect(res.body).toEqual({ received: 1, applied: 0, ignored: 1 });
  });
});
