import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { AppProcess, createInstallation, Installation, startAppProcess } from '../support/app-process';
import { freePort } from '../support/free-port';
import { waitFor } from '../support/wait-for';

const DOMAIN = 'drain.acme.test';
/** How long the provider takes over each message: long enough that jobs are under way at SIGTERM. */
const SMTP_DATA_MS = 300;
const SENDERS = 6;

/**
 * A provider that takes SMTP_DATA_MS per message and notices a transaction cut off in the middle (a connection
 * closed between MAIL FROM and the end of DATA).
 */
async function startSlowProvider() {
  const subjects: string[] = [];
  const open = new Set<string>();
  let cutOff = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onMailFrom: (_address, session, callback) => {
      open.add(session.id);
      callback();
    },
    onData: (stream, session, callback) => {
      simpleParser(stream).then((mail) => {
        setTimeout(() => {
          subjects.push(mail.subject ?? '');
          open.delete(session.id);
          callback();
        }, SMTP_DATA_MS);
      }, callback);
    },
    onClose: (session) => {
      if (open.delete(session.id)) cutOff++;
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    subjects,
    inFlight: () => open.size,
    cutOff: () => cutOff,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Outcome = { subject: string; status: number } | { subject: string; error: string };

// SIGTERM (issue 15, D-34): readiness turns 503 at once, the HTTP server stops taking connections while the
// requests under way finish, the jobs under way finish, and every send that was answered 200 is delivered
// exactly once (the rest of the queue by the next worker). Real processes, as a deployment runs them.
describe('graceful shutdown', () => {
  let provider: Awaited<ReturnType<typeof startSlowProvider>>;
  let installation: Installation;
  const processes: AppProcess[] = [];
  let shared: Record<string, string>;
  let url: string;
  let adminKey: string;

  beforeAll(async () => {
    provider = await startSlowProvider();
    installation = await createInstallation('drain');
    shared = {
      ...installation.env,
      SMTP_URL: provider.url,
      INBOUND_SMTP_PORT: '0',
      EMAIL_WORKER_CONCURRENCY: '4',
      SHUTDOWN_DELAY_MS: '700',
      SHUTDOWN_TIMEOUT_MS: '15000',
    };
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const first = startAppProcess('all', { ...shared, APP_ROLE: 'all', WORKER_PROCESSES: '2', PORT: String(port), WORKER_PORT: '0' });
    processes.push(first);
    await waitFor(
      'the service to be ready',
      async () => (await fetch(`${url}/health/ready`).catch(() => null))?.ok === true,
      Boolean,
      45_000,
    );
    const tenant = await post('/admin/accounts', installation.operatorKey, { name: 'Drain', tier: 'enterprise' });
    adminKey = ((await tenant.json()) as { apiKey: { key: string } }).apiKey.key;
    expect((await post('/domains', adminKey, { domain: DOMAIN })).status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await provider?.close();
    await installation?.remove();
  }, 30_000);

  /** A new connection per request (`Connection: close`), so that no request rides a kept-alive socket the server is closing. */
  function post(path: string, key: string, body: unknown): Promise<Response> {
    return fetch(`${url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Connection: 'close' },
      body: JSON.stringify(body),
    });
  }

  it('stops taking requests, finishes the jobs under way and loses nothing it accepted', async () => {
    const first = processes[0];
    const outcomes: Outcome[] = [];
    let sequence = 0;
    let stopped = false;
    /** Sends one after another until the server is gone. */
    const sender = async () => {
      while (!stopped) {
        const subject = `drain ${sequence++}`;
        try {
          const res = await post('/email/send', adminKey, { from: `hello@${DOMAIN}`, to: 'ada@example.org', subject, text: 'x' });
          outcomes.push({ subject, status: res.status });
          await res.arrayBuffer();
        } catch (err) {
          const code = (err as { cause?: { code?: string } }).cause?.code ?? String(err);
          outcomes.push({ subject, error: code });
          if (code === 'ECONNREFUSED') return;
        }
      }
    };
    const senders = Array.from({ length: SENDERS }, sender);

    await waitFor('a backlog and deliveries under way', () => provider.inFlight() > 0 && provider.subjects.length >= 3, Boolean, 20_000);
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      first.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    const signalledAt = Date.now();
    first.child.kill('SIGTERM');

    // During SHUTDOWN_DELAY_MS: readiness says so, and requests are still served.
    const readiness = await fetch(`${url}/health/ready`, { headers: { Connection: 'close' } });
    expect(readiness.status).toBe(503);
    expect(await readiness.json()).toMatchObject({ status: 'shutting_down' });

    const { code, signal } = await exited;
    const tookMs = Date.now() - signalledAt;
    stopped = true;
    await Promise.all(senders);
    expect({ code, signal }).toEqual(expect.objectContaining(signal ? { signal: 'SIGTERM' } : { code: 0 }));
    expect(tookMs).toBeLessThan(15_000);
    // The jobs under way at SIGTERM finished: no SMTP transaction was cut off.
    expect(provider.cutOff()).toBe(0);

    // Every answer was a 200, or the connection was refused or reset before the server read the request (one
    // waiting in the listen backlog when the server stopped listening): no 5xx, and nothing taken unanswered.
    const accepted = outcomes.filter((o) => 'status' in o && o.status === 200).map((o) => o.subject);
    const unanswered = outcomes.filter((o) => 'error' in o && ['ECONNREFUSED', 'ECONNRESET'].includes(o.error)).map((o) => o.subject);
    expect(outcomes.filter((o) => !accepted.includes(o.subject) && !unanswered.includes(o.subject))).toEqual([]);
    expect(accepted.length).toBeGreaterThan(10);

    // What was still queued is delivered by the next worker, and nothing twice.
    const deliveredBeforeExit = provider.subjects.length;
    const port = await freePort();
    // How many were accepted depends on the machine's speed (hundreds, with HTTP on a thread of its own); the
    // next worker takes them 20 at a time so that the slow provider's 300 ms each stay well inside the wait.
    processes.push(
      startAppProcess('worker', {
        ...shared,
        APP_ROLE: 'worker',
        WORKER_PORT: String(port),
        EMAIL_WORKER_CONCURRENCY: '20',
        SMTP_POOL_SIZE: '20',
      }),
    );
    await waitFor(
      'every accepted send at the provider',
      () => accepted.filter((subject) => !provider.subjects.includes(subject)),
      (missing) => missing.length === 0,
      45_000,
    );
    const twice = provider.subjects.filter((subject, i) => provider.subjects.indexOf(subject) !== i);
    expect(twice).toEqual([]);
    // Nothing a client was not told about was sent.
    expect(provider.subjects.filter((subject) => !accepted.includes(subject))).toEqual([]);
    expect(deliveredBeforeExit).toBeGreaterThan(0);
  }, 120_000);
});
