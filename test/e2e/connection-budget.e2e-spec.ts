import { Client } from 'pg';
import { type AppProcess, createInstallation, type Installation, startAppProcess } from '../support/app-process';
import { freePort } from '../support/free-port';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { databaseUrl } from '../support/test-env';
import { waitFor } from '../support/wait-for';

const WORKER_THREADS = 6;
const DATABASE_POOL_SIZE = 14;
const SMTP_POOL_SIZE = 6;
const SENDS = 240;
const AT_ONCE = 60;
const DOMAIN = 'budget.mailroom.test';

// DATABASE_POOL_SIZE and SMTP_POOL_SIZE are budgets of the process, shared out among its HTTP thread and its worker
// threads: seven threads under load open no more than the budget to PostgreSQL and to the provider.
describe('Connection budgets of a process with worker threads', () => {
  let installation: Installation;
  let sink: SmtpSink;
  let app: AppProcess;
  let url: string;
  let observer: Client;
  let databaseName: string;

  beforeAll(async () => {
    installation = await createInstallation('budget');
    databaseName = new URL(installation.env.DATABASE_URL).pathname.slice(1);
    sink = await startSmtpSink({ parse: false });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    app = startAppProcess('budget', {
      ...installation.env,
      APP_ROLE: 'all',
      WORKER_PROCESSES: String(WORKER_THREADS),
      DATABASE_POOL_SIZE: String(DATABASE_POOL_SIZE),
      SMTP_POOL_SIZE: String(SMTP_POOL_SIZE),
      PORT: String(port),
      INBOUND_SMTP_PORT: '0',
      SMTP_URL: sink.url,
    });
    // Connected to another database, so that the observer is not among the connections it counts.
    observer = new Client({ connectionString: databaseUrl('postgres') });
    await observer.connect();
    await waitFor(
      'every worker thread to take jobs',
      async () => {
        const ready = await fetch(`${url}/health/ready`).catch(() => null);
        return ready?.ok ? ((await ready.json()) as { details: { workers: { connected: number } } }).details.workers.connected : 0;
      },
      (connected) => connected === WORKER_THREADS,
      60_000,
    );
  }, 90_000);

  afterAll(async () => {
    await observer?.end();
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

  const connectionsToDatabase = async () =>
    (await observer.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [databaseName])).rows[0].n;

  it('keeps PostgreSQL and SMTP connections within the budgets while every thread works', async () => {
    const tenant = (await (await post('/admin/accounts', installation.operatorKey, { name: 'Budget', tier: 'enterprise' })).json()) as {
      apiKey: { key: string };
    };
    const key = tenant.apiKey.key;
    expect((await post('/domains', key, { domain: DOMAIN })).status).toBe(201);

    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await connectionsToDatabase());
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    const statuses: number[] = [];
    for (let first = 0; first < SENDS; first += AT_ONCE) {
      const wave = Array.from({ length: Math.min(AT_ONCE, SENDS - first) }, (_, i) =>
        post('/email/send', key, {
          from: `hello@${DOMAIN}`,
          to: `reader${first + i}@example.org`,
          subject: `budget ${first + i}`,
          text: 'hi',
        }),
      );
      statuses.push(...(await Promise.all(wave)).map((answer) => answer.status));
    }
    await waitFor(
      'every message at the sink',
      () => sink.count,
      (n) => n >= SENDS,
      60_000,
    );
    sampling = false;
    await sampler;

    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(sink.count).toBe(SENDS);
    expect(peak).toBeGreaterThan(WORKER_THREADS); // every thread did hold connections
    expect(peak).toBeLessThanOrEqual(DATABASE_POOL_SIZE);
    expect(await connectionsToDatabase()).toBeLessThanOrEqual(DATABASE_POOL_SIZE);
    expect(sink.peakConnections).toBeLessThanOrEqual(SMTP_POOL_SIZE);
  }, 120_000);

  it('shows each thread’s connections and its share of the budgets in /metrics', async () => {
    const auth = { Authorization: `Basic ${Buffer.from(`prometheus:${installation.operatorKey}`).toString('base64')}` };
    const text = await (await fetch(`${url}/metrics`, { headers: auth })).text();
    const series = (name: string) =>
      [...text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'))].map(([, labels, value]) => ({ labels, value: Number(value) }));
    const sum = (name: string) => series(name).reduce((total, { value }) => total + value, 0);

    expect(series('mailroom_db_connections_max')).toHaveLength(WORKER_THREADS + 1);
    expect(sum('mailroom_db_connections_max')).toBe(DATABASE_POOL_SIZE);
    expect(series('mailroom_smtp_connections_max')).toHaveLength(WORKER_THREADS);
    expect(sum('mailroom_smtp_connections_max')).toBe(SMTP_POOL_SIZE);
    const inUse = series('mailroom_db_connections').filter(({ labels }) => labels.includes('state="in_use"'));
    expect(inUse.map(({ labels }) => /thread="([^"]+)"/.exec(labels)![1]).sort()).toEqual(
      ['main', ...Array.from({ length: WORKER_THREADS }, (_, slot) => `worker-${slot}`)].sort(),
    );
    const open = sum('mailroom_db_connections');
    expect(open).toBeGreaterThan(0);
    expect(open).toBeLessThanOrEqual(DATABASE_POOL_SIZE);
  });
});
