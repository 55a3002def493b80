import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import request from 'supertest';
import { AppProcess, createInstallation, Installation, startAppProcess } from '../support/app-process';
import { shortRandom } from '../support/test-env';
import { bearer } from '../support/factories';
import { freePort } from '../support/free-port';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { waitFor } from '../support/wait-for';
import { rawMessage } from '../support/raw-message';

/** SMTP_MAX_RATE of the installation: recipients a second handed to the provider by both workers together. */
const RATE = 10;
/**
 * The pacer admits at most RATE slots in any second of the Redis clock, all at once when that many wait (its only
 * burst). The sink sees an email some time after its slot: signing, the SMTP transaction, opening the first
 * connections, and event-loop stalls of the workers and of this process, which stamps the arrivals while it is
 * still sending the burst: hundreds of ms at the start, more on a loaded machine (the tests run in parallel on
 * two cores). That lag varies by up to LAG_SPREAD_MS, so the arrivals in any window of W ms have their slots
 * within W + LAG_SPREAD_MS: at most RATE × (W / 1000 + 1) of them.
 */
const LAG_SPREAD_MS = 1000;
const SENDS = 60;
const FORM_POSTS = 10;
const FORWARDS = 10;
const DOMAIN = 'scale.acme.test';
const SITE = `https://www.${DOMAIN}`;
const FORWARD_TO = 'dest@x.test';

interface ReceivedHook {
  headers: IncomingHttpHeaders;
  body: { type: string; messageId?: string; submissionId?: string };
}

/** Distinct ports nobody listens on. */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** The values that occur more than once. */
const repeated = (values: string[]) => values.filter((value, i) => values.indexOf(value) !== i);

// The scale-out claim, with real processes: PostgreSQL and Redis are the only shared state, so two
// APP_ROLE=api processes and two APP_ROLE=worker processes (src/main.ts each, as deployed) serve sends, form
// posts, webhooks and forwarding together; each email reaches the provider once, each webhook event once, and
// the send pacer holds SMTP_MAX_RATE across both workers.
describe('scale-out: two API and two worker processes on one PostgreSQL and one Redis', () => {
  let sink: SmtpSink;
  let receiver: Server;
  const hooks: ReceivedHook[] = [];
  let installation: Installation;
  const processes: AppProcess[] = [];
  let apiUrls: string[];
  let inboundPorts: number[];
  let adminKey: string;
  let formId: string;
  let webhookId: string;

  /** The API processes in turn: request i goes to process i mod 2. */
  const api = (i: number) => request(apiUrls[i % 2]);

  beforeAll(async () => {
    // Each worker logs in to the sink under its own name, so that the test can tell who delivered what.
    sink = await startSmtpSink({ auth: true });
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        hooks.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));

    installation = await createInstallation('scale');
    const [apiPort0, apiPort1, workerPort0, workerPort1, inboundPort0, inboundPort1] = await freePorts(6);
    apiUrls = [`http://127.0.0.1:${apiPort0}`, `http://127.0.0.1:${apiPort1}`];
    inboundPorts = [inboundPort0, inboundPort1];
    const { operatorKey } = installation;
    // One configuration for the installation, as a ConfigMap and a Secret give every pod the same.
    const shared = {
      ...installation.env,
      SMTP_MAX_RATE: String(RATE),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      INBOUND_SMTP_HOST: '127.0.0.1',
      INBOUND_SMTP_HOSTNAME: 'mx.mailroom.test',
    };
    const smtpUrl = (user: string) => `smtp://${user}:secret@127.0.0.1:${sink.port}`;
    processes.push(
      startAppProcess('api-0', { ...shared, APP_ROLE: 'api', PORT: String(apiPort0), SMTP_URL: smtpUrl('api-0') }),
      startAppProcess('api-1', { ...shared, APP_ROLE: 'api', PORT: String(apiPort1), SMTP_URL: smtpUrl('api-1') }),
      startAppProcess('worker-0', {
        ...shared,
        APP_ROLE: 'worker',
        WORKER_PORT: String(workerPort0),
        INBOUND_SMTP_PORT: String(inboundPort0),
        SMTP_URL: smtpUrl('worker-0'),
      }),
      startAppProcess('worker-1', {
        ...shared,
        APP_ROLE: 'worker',
        WORKER_PORT: String(workerPort1),
        INBOUND_SMTP_PORT: String(inboundPort1),
        SMTP_URL: smtpUrl('worker-1'),
      }),
    );
    const alive = () => {
      const dead = processes.find((p) => !p.running);
      if (dead) throw new Error(`${dead.name} exited while starting:\n${dead.output()}`);
    };
    const ready = async (url: string) => (await fetch(`${url}/health/ready`).catch(() => null))?.ok === true;
    const workerUrls = [`http://127.0.0.1:${workerPort0}`, `http://127.0.0.1:${workerPort1}`];
    await Promise.all(
      // A worker answers its probes on WORKER_PORT once it runs its queue processors and inbound SMTP server.
      [...apiUrls, ...workerUrls].map((url) => waitFor(`${url}/health/ready`, () => (alive(), ready(url)), Boolean, 45_000)),
    );

    // Everything a user would set up, through the API, alternating the two processes.
    const tenant = await api(0).post('/admin/accounts').set(bearer(operatorKey)).send({ name: 'Scale', tier: 'enterprise' }).expect(201);
    adminKey = tenant.body.apiKey.key;
    await api(1).post('/domains').set(bearer(adminKey)).send({ domain: DOMAIN }).expect(201);
    await api(0)
      .put(`/domains/${DOMAIN}`)
      .set(bearer(adminKey))
      .send({ forwarding: { info: [FORWARD_TO] } })
      .expect(200);
    const form = await api(1)
      .post('/api/forms')
      .set(bearer(adminKey))
      .send({ name: 'Contact', to: 'owner@acme.example', rateLimit: 1000, allowedOrigins: [SITE] })
      .expect(201);
    formId = form.body.id;
    const webhook = await api(0)
      .post('/email/webhooks')
      .set(bearer(adminKey))
      .send({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, events: ['sent', 'form.submission'] })
      .expect(201);
    webhookId = webhook.body.id;
  }, 90_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await sink?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await installation?.remove();
  }, 30_000);

  /** What a message at the sink is: the subject of a send or a forward, the marker in a form notification's text. */
  const labelOf = (mail: ReceivedMail) => {
    const subject = mail.parsed?.subject ?? '';
    if (/^(send|forward) /.test(subject)) return subject;
    return /form \S+ \d+/.exec(mail.parsed?.text ?? '')?.[0] ?? `unknown: ${subject}`;
  };

  it('delivers every send, form notification and forward once, and no more than SMTP_MAX_RATE a second across both workers', async () => {
    const batch = shortRandom();
    const sends = Array.from({ length: SENDS }, (_, i) => `send ${batch} ${i}`);
    const posts = Array.from({ length: FORM_POSTS }, (_, i) => `form ${batch} ${i}`);
    const forwards = Array.from({ length: FORWARDS }, (_, i) => `forward ${batch} ${i}`);
    const inbound = inboundPorts.map((port) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true }));

    // One burst: everything at once, spread over both API processes and both inbound servers.
    const [sent, submitted, forwarded] = await Promise.all([
      Promise.all(
        sends.map(async (subject, i) => {
          const res = await api(i)
            .post('/email/send')
            .set(bearer(adminKey))
            .send({ from: `hello@${DOMAIN}`, to: `r${i}@example.org`, subject, text: 'x' })
            .expect(200);
          return res.body.messageId as string;
        }),
      ),
      Promise.all(
        posts.map(async (marker, i) => {
          const res = await api(i)
            .post(`/f/${formId}`)
            .set({ Accept: 'application/json', Origin: SITE })
            .send({ email: `visitor${i}@example.org`, message: marker })
            .expect(200);
          return res.body.submissionId as string;
        }),
      ),
      Promise.all(
        forwards.map((subject, i) =>
          inbound[i % 2].sendMail({
            envelope: { from: 'sender@origin.test', to: [`info@${DOMAIN}`] },
            raw: rawMessage(`info@${DOMAIN}`, subject, { body: 'Forwarded through one of two workers.\r\n' }),
          }),
        ),
      ),
    ]);
    inbound.forEach((client) => client.close());
    expect(forwarded.map((info) => info.response)).toEqual(forwards.map(() => expect.stringMatching(/^250 /)));

    const total = SENDS + FORM_POSTS + FORWARDS;
    await waitFor(
      'every email at the sink',
      () => sink.messages.length,
      (n) => n >= total,
      40_000,
    );
    // A second delivery of a job would come from the other worker at about the same time: give it the chance.
    await new Promise((resolve) => setTimeout(resolve, 1500));

    const mails = sink.messages;
    expect(mails.map(labelOf).sort()).toEqual([...sends, ...posts, ...forwards].sort());
    expect(repeated(mails.map((mail) => mail.parsed?.messageId ?? 'none'))).toEqual([]);
    // Both workers took their share of the burst (each logs in to the sink under its own name).
    expect(new Set(mails.map((mail) => mail.user))).toEqual(new Set(['worker-0', 'worker-1']));

    const times = mails.map((mail) => mail.receivedAt).sort((a, b) => a - b);
    const arrivalsWithin = (windowMs: number) =>
      Math.max(...times.map((start) => times.filter((t) => t >= start && t < start + windowMs).length));
    // Paced per worker (2 × RATE a second) or not at all, 4 s would see every email; shared, at most 5 × RATE.
    for (const seconds of [1, 2, 3, 4]) expect(arrivalsWithin(seconds * 1000)).toBeLessThanOrEqual(RATE * (seconds + 1));
    expect(times[times.length - 1] - times[0]).toBeGreaterThanOrEqual((Math.ceil(total / RATE) - 1) * 1000 - LAG_SPREAD_MS);

    // Webhooks: one `sent` event per email (form notifications and forwards are messages too), one
    // `form.submission` per post; every event delivered once.
    const events = FORM_POSTS + total;
    await waitFor(
      'every event at the webhook receiver',
      () => hooks.length,
      (n) => n >= events,
      20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const eventIds = hooks.map((hook) => String(hook.headers['webhook-id']));
    expect(eventIds).toHaveLength(events);
    expect(repeated(eventIds)).toEqual([]);
    const ofType = (type: string, field: 'messageId' | 'submissionId') =>
      hooks.filter((hook) => hook.body.type === type).map((hook) => String(hook.body[field]));
    expect(ofType('sent', 'messageId')).toHaveLength(total);
    expect(repeated(ofType('sent', 'messageId'))).toEqual([]);
    expect(ofType('sent', 'messageId')).toEqual(expect.arrayContaining(sent));
    expect(ofType('form.submission', 'submissionId').sort()).toEqual([...submitted].sort());

    // The delivery log, read through the other process, agrees: each event delivered at the first attempt.
    const logged: { eventId: string; status: string; attempts: unknown[] }[] = [];
    let cursor: string | null = null;
    do {
      const page: request.Response = await api(1)
        .get(`/email/webhooks/${webhookId}/deliveries`)
        .query({ limit: 100, ...(cursor ? { cursor } : {}) })
        .set(bearer(adminKey))
        .expect(200);
      logged.push(...page.body.deliveries);
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(logged.map((d) => d.eventId).sort()).toEqual([...eventIds].sort());
    expect(logged.filter((d) => d.status !== 'succeeded' || d.attempts.length !== 1)).toEqual([]);
  }, 60_000);

  it('answers an Idempotency-Key sent to one API process from the other, and sends that email once', async () => {
    const subject = `send idempotent ${shortRandom()}`;
    const body = { from: `hello@${DOMAIN}`, to: 'once@example.org', subject, text: 'x' };
    const key = `scale-${shortRandom()}`;
    const first = await api(0).post('/email/send').set(bearer(adminKey)).set('Idempotency-Key', key).send(body).expect(200);
    const again = await api(1).post('/email/send').set(bearer(adminKey)).set('Idempotency-Key', key).send(body).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.messageId).toBe(first.body.messageId);

    await sink.waitFor((mail) => mail.parsed?.subject === subject);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(sink.messages.filter((mail) => mail.parsed?.subject === subject)).toHaveLength(1);
  });

  it('counts a key’s burst_limit once for both API processes', async () => {
    const created = await api(0)
      .post('/api-keys')
      .set(bearer(adminKey))
      .send({ name: 'burst', keyType: 'usage', restrictions: { burst_limit: 4 } })
      .expect(201);
    const key = created.body.apiKey.key as string;
    for (const [i, remaining] of [3, 2, 1, 0].entries()) {
      const res = await api(i).get('/auth/whoami').set(bearer(key)).expect(200);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining));
    }
    const refused = await api(4).get('/auth/whoami').set(bearer(key)).expect(429);
    expect(refused.body.error).toMatchObject({ code: 'API_KEY_RATE_LIMIT', details: { scope: 'api-key', limit: 4 } });
  });
});
