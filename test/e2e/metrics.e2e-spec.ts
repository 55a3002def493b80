import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import request from 'supertest';
import { startProbeServer } from '../../src/health/probe-server';
import { InboundSmtpServer } from '../../src/forwarding/inbound-smtp.server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { freePort } from '../support/free-port';
import { createTestApp, type TestApp } from '../support/test-app';
import { waitForValue } from '../support/wait-for';

const METRICS_TOKEN = 'prometheus-scrape-token-0123456789';
const basic = (password: string) => ({ Authorization: `Basic ${Buffer.from(`prometheus:${password}`).toString('base64')}` });

/** The value of one sample in Prometheus text, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(/,(?=\w+=")/);
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return undefined;
}

// GET /metrics (issue 15): Prometheus text behind an operator key (operator.metrics) or METRICS_TOKEN, with bounded labels.
describe('Prometheus metrics', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let receiver: Server;
  let hooks = 0;
  let owner: { accountId: string; adminKey: string };
  let domain: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    receiver = createServer((req, res) => {
      req.resume().on('end', () => {
        hooks++;
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        METRICS_TOKEN,
        RATE_LIMIT_ENABLED: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        INBOUND_SMTP_PORT: String(await freePort()),
      },
    });
    owner = await createAccount(t, 'Metrics');
    domain = `metrics-${Date.now().toString(36)}.test`;
    await createVerifiedDomain(t, owner.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await new Promise((resolve) => receiver.close(resolve));
  });

  const scrape = async () => (await t.http.get('/metrics').set(bearer(METRICS_TOKEN)).expect(200)).text;

  it('asks for operator basic auth or the token, in the one error body', async () => {
    const anonymous = await t.http.get('/metrics').expect(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic realm="Mailroom metrics"/);
    expect(anonymous.body).toEqual({
      error: expect.objectContaining({ code: 'AUTH_MISSING' }),
      documentation: 'http://mailroom.test/docs#errors',
    });
    await t.http.get('/metrics').set(bearer('not-the-token-at-all')).expect(401);
    await t.http.get('/metrics').set(basic('svc_sk_admin_wrong')).expect(401);
    // An admin key of an ordinary account is not the operator's: a valid key that may not look.
    await t.http.get('/metrics').set(basic(owner.adminKey)).expect(403);

    const byOperator = await t.http.get('/metrics').set(basic(t.operatorKey)).expect(200);
    expect(byOperator.headers['content-type']).toMatch(/^text\/plain;.*version=0\.0\.4/);
    expect(byOperator.text).toContain('# TYPE mailroom_http_request_duration_seconds histogram');
    expect(byOperator.text).toContain('process_cpu_user_seconds_total');
    expect(byOperator.text).toContain('nodejs_eventloop_lag_seconds');
    await t.http.get('/metrics').set(bearer(METRICS_TOKEN)).expect(200);
  });

  it('counts an email through its statuses, the job that delivered it, the webhook attempt and the queues', async () => {
    await t.http
      .post('/email/webhooks')
      .set(bearer(owner.adminKey))
      .send({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, events: ['sent'] })
      .expect(201);
    const before = await scrape();
    const sent = await t.http
      .post('/v1/send')
      .set(bearer(owner.adminKey))
      .send({ from: `news@${domain}`, to: ['ada@example.org'], subject: 'Counted', text: 'hi' })
      .expect(200);
    await sink.waitFor((mail) => mail.parsed?.subject === 'Counted');
    await waitForValue('the sent webhook', () => (hooks > 0 ? true : undefined));
    const messageId: string = sent.body.id ?? sent.body.messageId;
    await t.http.get(`/email/status/${messageId}`).set(bearer(owner.adminKey)).expect(200);

    const after = await waitForValue('the webhook attempt in the metrics', async () => {
      const text = await scrape();
      return (sample(text, 'mailroom_webhook_attempts_total', { outcome: 'succeeded' }) ?? 0) >= 1 ? text : undefined;
    });
    const grew = (name: string, labels: Record<string, string>) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(grew('mailroom_emails_total', { status: 'queued' })).toBe(1);
    expect(
      grew('mailroom_emails_total', { status: 'delivered' }) + grew('mailroom_emails_total', { status: 'sent' }),
    ).toBeGreaterThanOrEqual(1);
    expect(grew('mailroom_job_duration_seconds_count', { queue: 'email', outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(grew('mailroom_job_duration_seconds_count', { queue: 'webhooks', outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    for (const queue of ['email', 'webhooks', 'list-sends']) {
      for (const state of ['waiting', 'active', 'delayed', 'failed'])
        expect(sample(after, 'mailroom_queue_jobs', { queue, state })).toEqual(expect.any(Number));
    }

    // Route patterns, never raw paths: the message id is nowhere in the labels.
    expect(grew('mailroom_http_request_duration_seconds_count', { method: 'POST', route: '/v1/send', status: '200' })).toBe(1);
    expect(
      sample(after, 'mailroom_http_request_duration_seconds_count', { method: 'GET', route: '/email/status/:messageId', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    expect(after).not.toContain(messageId);
    await t.http.get(`/no/such/${messageId}`).expect(404);
    const unmatched = await scrape();
    expect(sample(unmatched, 'mailroom_http_request_duration_seconds_count', { method: 'GET', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(unmatched).not.toContain(messageId);
  });

  it('counts the limiter’s refusals by scope, and is not itself limited', async () => {
    const { key } = await createKey(t, owner.adminKey, {
      name: 'tight',
      keyType: 'usage',
      permissions: ['email.send'],
      restrictions: { burst_limit: 1 },
    });
    await t.http.get('/auth/whoami').set(bearer(key)).expect(200);
    await t.http.get('/auth/whoami').set(bearer(key)).expect(429);
    const text = await scrape();
    expect(sample(text, 'mailroom_rate_limit_rejections_total', { scope: 'api-key' })).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 30; i++) await t.http.get('/metrics').set(bearer(METRICS_TOKEN)).expect(200);
  });

  it('counts inbound SMTP sessions, open and in total', async () => {
    const port = t.app.get(InboundSmtpServer).port;
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    const open = await scrape();
    expect(sample(open, 'mailroom_inbound_smtp_sessions_active')).toBe(1);
    expect(sample(open, 'mailroom_inbound_smtp_sessions_total', { result: 'accepted' })).toBeGreaterThanOrEqual(1);
    socket.end('QUIT\r\n');
    await waitForValue('the session to close', async () =>
      sample(await scrape(), 'mailroom_inbound_smtp_sessions_active') === 0 ? true : undefined,
    );
  });

  it('serves the same probes and metrics on a worker’s probe port', async () => {
    const probes = await startProbeServer(t.app, 0);
    try {
      const http = request(`http://127.0.0.1:${(probes.address() as AddressInfo).port}`);
      await http.get('/health').expect(200, { status: 'ok' });
      const ready = await http.get('/health/ready').expect(200);
      expect(ready.body).toMatchObject({ status: 'ok', checks: { postgres: 'up', redis: 'up', provider: 'up', workers: 'up' } });
      expect(ready.body.details.workers.connected).toBeGreaterThanOrEqual(1);
      await http.get('/metrics').expect(401);
      // The same checks as the API's /metrics, answered in the one error body without Nest's filter.
      const { key: queuesOnly } = await createKey(t, t.operatorKey, { keyType: 'admin', permissions: ['operator.queues'] });
      const refused = await http.get('/metrics').set(bearer(queuesOnly)).expect(403);
      expect(refused.body).toEqual({
        error: { code: 'FORBIDDEN', message: 'This key lacks the permission operator.metrics' },
        documentation: 'http://mailroom.test/docs#errors',
      });
      const metrics = await http.get('/metrics').set(basic(t.operatorKey)).expect(200);
      expect(metrics.text).toContain('mailroom_queue_jobs{queue="email",state="waiting"}');
    } finally {
      await new Promise((resolve) => probes.close(resolve));
    }
  });
});
