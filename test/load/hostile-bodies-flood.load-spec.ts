import { readFileSync } from 'node:fs';
import { bearer } from '../support/factories';
import { type AppProcess, createInstallation, type Installation, startAppProcess } from '../support/app-process';
import { freePort } from '../support/free-port';
import { hostileRequest, type HostileRequest } from '../support/hostile-client';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { shortRandom } from '../support/test-env';
import { waitFor } from '../support/wait-for';

const MB = 1024 * 1024;
const FLOOD = 30;
const BODY_BYTES = 40 * MB;
/** What the flood may add to the process's resident memory. Thirty bodies of 40 MB held at once would be 1.2 GB. */
const RSS_GROWTH_BOUND = 150 * MB;
const DOMAIN = 'flood.acme.test';
const SITE = `https://www.${DOMAIN}`;

/** Resident memory of a process (VmRSS of /proc/<pid>/status) in bytes. */
function residentBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) * 1024;
}

/** A pause that does not keep the test run alive. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

// Thirty anonymous clients each send a 40 MB body at once, announced or chunked, at form routes, the provider's
// event route and a tracking link, against the service as deployed (src/main.ts, HTTP and a worker thread in one
// process). It keeps answering /health, its memory stays flat, and a send made during the flood is delivered.
describe('a flood of 40 MB bodies at the open routes', () => {
  let installation: Installation;
  let sink: SmtpSink;
  let app: AppProcess;
  let port: number;
  let url: string;
  let adminKey: string;
  let formId: string;

  beforeAll(async () => {
    installation = await createInstallation('flood');
    sink = await startSmtpSink();
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    app = startAppProcess('flood', {
      ...installation.env,
      APP_ROLE: 'all',
      WORKER_PROCESSES: '1',
      PORT: String(port),
      INBOUND_SMTP_PORT: '0',
      SMTP_URL: sink.url,
      PROVIDER_WEBHOOK_SECRET: 'flood-secret',
    });
    const ready = async () => (await fetch(`${url}/health/ready`).catch(() => null))?.ok === true;
    await waitFor('the service to be ready', ready, Boolean, 45_000);

    const json = (key: string) => ({ ...bearer(key), 'Content-Type': 'application/json' });
    const tenant = await fetch(`${url}/admin/accounts`, {
      method: 'POST',
      headers: json(installation.operatorKey),
      body: JSON.stringify({ name: 'Flood', tier: 'enterprise' }),
    });
    expect(tenant.status).toBe(201);
    adminKey = ((await tenant.json()) as { apiKey: { key: string } }).apiKey.key;
    const domain = await fetch(`${url}/domains`, { method: 'POST', headers: json(adminKey), body: JSON.stringify({ domain: DOMAIN }) });
    expect(domain.status).toBe(201);
    const form = await fetch(`${url}/api/forms`, {
      method: 'POST',
      headers: json(adminKey),
      body: JSON.stringify({ name: 'Contact', to: 'owner@acme.example', allowedOrigins: [SITE] }),
    });
    expect(form.status).toBe(201);
    formId = ((await form.json()) as { id: string }).id;
  }, 90_000);

  afterAll(async () => {
    await app?.stop();
    await sink?.close();
    await installation?.remove();
  }, 30_000);

  it('keeps answering /health, stays under its memory bound, and accepts and delivers a send made meanwhile', async () => {
    const pid = app.child.pid!;
    // The baseline: the service warmed up by a few requests, its memory read a few times.
    for (let i = 0; i < 5; i++) expect((await fetch(`${url}/health`)).status).toBe(200);
    let baseline = 0;
    for (let i = 0; i < 10; i++, await sleep(100)) baseline = Math.max(baseline, residentBytes(pid));

    let peak = baseline;
    let flooding = true;
    const sampler = (async () => {
      while (flooding) {
        peak = Math.max(peak, residentBytes(pid));
        await sleep(25);
      }
    })();
    const health: number[] = [];
    const prober = (async () => {
      while (flooding) {
        const status = await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) }).then(
          (res) => res.status,
          () => 0,
        );
        health.push(status);
        await sleep(100);
      }
    })();

    const form = { 'Content-Type': 'application/x-www-form-urlencoded', Origin: SITE, Accept: 'application/json' };
    const json = { 'Content-Type': 'application/json' };
    const targets: HostileRequest[] = [
      { method: 'POST', path: `/f/${formId}`, headers: form },
      { method: 'POST', path: `/${DOMAIN}/contact`, headers: form, chunked: true },
      { method: 'POST', path: `/f/${formId}`, headers: form, chunked: true },
      { method: 'POST', path: '/provider/events', headers: json },
      { method: 'POST', path: '/provider/events', headers: json, chunked: true },
      { method: 'POST', path: '/t/o/some-token', headers: json, chunked: true },
    ];
    const flood = Array.from({ length: FLOOD }, (_, i) => hostileRequest(port, { ...targets[i % targets.length], bodyBytes: BODY_BYTES }));

    // A send in the middle of the flood.
    await sleep(300);
    const subject = `during the flood ${shortRandom()}`;
    const send = await fetch(`${url}/email/send`, {
      method: 'POST',
      headers: { ...bearer(adminKey), 'Content-Type': 'application/json' },
      body: JSON.stringify({
        from: `hello@${DOMAIN}`,
        to: 'ada@example.org',
        subject,
        text: 'Sent while thirty clients flood the service.',
      }),
      signal: AbortSignal.timeout(20_000),
    });
    expect(send.status).toBe(200);

    const answers = await Promise.all(flood.map((request) => request.answer.then((a) => a.status).catch(() => 0)));
    await Promise.all(flood.map((request) => Promise.race([request.closed, sleep(30_000)])));
    await sink.waitFor((mail) => mail.parsed?.subject === subject, 30_000);
    flooding = false;
    await Promise.all([sampler, prober]);

    process.stdout.write(
      `flood: RSS baseline ${(baseline / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB; ${health.length} health probes; ` +
        `body bytes sent ${(flood.reduce((sum, request) => sum + request.sent, 0) / MB).toFixed(0)} MB\n`,
    );
    expect(app.running).toBe(true);
    // Every flooding body was refused as too large (413), announced or cut as it arrived; none was taken whole.
    expect(answers).toEqual(flood.map(() => 413));
    expect(health.length).toBeGreaterThan(0);
    expect(health.filter((status) => status !== 200)).toEqual([]);
    expect(peak - baseline).toBeLessThan(RSS_GROWTH_BOUND);
  }, 120_000);
});
