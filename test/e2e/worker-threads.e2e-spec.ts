import { freePort } from '../support/free-port';
import { type AppProcess, createInstallation, type Installation, startAppProcess } from '../support/app-process';
import { smtpGreets } from '../support/smtp-greeting';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { waitFor } from '../support/wait-for';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { dkimVerify } = require('mailauth/lib/dkim/verify') as {
  dkimVerify: (raw: Buffer, options: { resolver: (name: string, type: string) => Promise<string[][]> }) => Promise<DkimResults>;
};

interface DkimResults {
  results: { signingDomain: string; status: { result: string } }[];
}

const DOMAIN = 'threads.mailroom.test';
const SENDS = 40;

// `npm start`'s layout (APP_ROLE=all, WORKER_PROCESSES=2): HTTP on the main thread, delivery and inbound SMTP in
// two worker threads of the same process (src/main.ts as deployed).
describe('APP_ROLE=all with worker threads', () => {
  let installation: Installation;
  let sink: SmtpSink;
  let app: AppProcess;
  let url: string;
  let inboundPort: number;

  beforeAll(async () => {
    installation = await createInstallation('threads');
    sink = await startSmtpSink();
    const port = await freePort();
    inboundPort = await freePort();
    url = `http://127.0.0.1:${port}`;
    app = startAppProcess('all', {
      ...installation.env,
      APP_ROLE: 'all',
      WORKER_PROCESSES: '2',
      PORT: String(port),
      INBOUND_SMTP_PORT: String(inboundPort),
      SMTP_URL: sink.url,
    });
    await waitFor(
      'the service to be ready',
      async () => (await fetch(`${url}/health/ready`).catch(() => null))?.ok === true,
      Boolean,
      45_000,
    );
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await sink?.close();
    await installation?.remove();
  }, 30_000);

  const post = (path: string, key: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('delivers every accepted send once, DKIM-signed, with both worker threads taking jobs', async () => {
    const workers = await waitFor(
      'both worker threads to take jobs',
      async () => ((await (await fetch(`${url}/health/ready`)).json()) as { details: { workers: { connected: number } } }).details.workers,
      (w) => w.connected === 2,
      20_000,
    );
    expect(workers).toMatchObject({ status: 'up', connected: 2 });
    await waitFor('the first thread’s inbound SMTP server', () => smtpGreets(inboundPort), Boolean, 20_000);

    const tenant = (await (await post('/admin/accounts', installation.operatorKey, { name: 'Threads', tier: 'enterprise' })).json()) as {
      apiKey: { key: string };
    };
    const key = tenant.apiKey.key;
    const domain = (await (await post('/domains', key, { domain: DOMAIN })).json()) as {
      dnsRecords: { purpose: string; name: string; value: string }[];
    };
    const dkimRecord = domain.dnsRecords.find((r) => r.purpose === 'dkim')!;

    const subjects = Array.from({ length: SENDS }, (_, i) => `threads ${i}`);
    const answers = await Promise.all(
      subjects.map((subject) =>
        post('/email/send', key, { from: `hello@${DOMAIN}`, to: 'ada@example.org', subject, text: `body of ${subject}` }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(subjects.map(() => 200));

    await waitFor(
      'every message at the sink',
      () => sink.messages.length,
      (n) => n >= SENDS,
      30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 500)); // anything sent twice would arrive by now
    expect(sink.messages.map((m) => m.parsed?.subject).sort()).toEqual([...subjects].sort());

    const resolver = (name: string, type: string) =>
      name === dkimRecord.name && type === 'TXT'
        ? Promise.resolve([[dkimRecord.value]])
        : Promise.reject(new Error(`no ${type} for ${name}`));
    for (const mail of sink.messages) {
      const { results } = await dkimVerify(mail.raw, { resolver });
      expect(results).toEqual([expect.objectContaining({ signingDomain: DOMAIN, status: expect.objectContaining({ result: 'pass' }) })]);
    }
  });

  it('adds the worker threads’ metrics up in the main thread’s /metrics', async () => {
    const auth = { Authorization: `Basic ${Buffer.from(`prometheus:${installation.operatorKey}`).toString('base64')}` };
    const text = await (await fetch(`${url}/metrics`, { headers: auth })).text();
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    // Jobs run and emails sent in the threads; requests served and queue depths read on the main thread.
    expect(value('mailroom_job_duration_seconds_count{queue="email",outcome="completed"}')).toBe(SENDS);
    expect(value('mailroom_emails_total{status="sent"}')).toBe(SENDS);
    expect(value('mailroom_http_request_duration_seconds_count{method="POST",route="/email/send",status="200"}')).toBe(SENDS);
    expect(value('mailroom_queue_jobs{queue="email",state="waiting"}')).toBe(0);
    // The process's own figures once, not once per thread.
    expect(text.match(/^process_resident_memory_bytes /gm)).toHaveLength(1);
  });

  // graceful-shutdown.e2e-spec.ts runs this layout too, with deliveries under way when SIGTERM comes.
  it('stops its worker threads and ends on SIGTERM as Nest does (by the signal, once closed)', async () => {
    const exited = new Promise((resolve) => app.child.once('exit', (code, signal) => resolve({ code, signal })));
    app.child.kill('SIGTERM');
    expect(await exited).toEqual({ code: null, signal: 'SIGTERM' });
  }, 30_000);
});
