import { spawn } from 'node:child_process';
import { IncomingMessage, request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { AppProcess, createInstallation, Installation, startAppProcess } from '../support/app-process';
import { freePort } from '../support/free-port';
import { waitFor } from '../support/wait-for';

const ROOT = join(__dirname, '..', '..');

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  lines: string[];
  ms: number;
}

interface LogLine {
  level: number;
  msg: string;
}

/** `npm start`'s entry point with exactly `env`; `whileRunning` may act on it (a signal) once its output says `when`. */
function runToExit(env: Record<string, string>, whileRunning?: { when: RegExp; then: (pid: number) => void }): Promise<Exit> {
  const started = Date.now();
  const child = spawn(process.execPath, ['-r', '@swc-node/register', join('src', 'main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let acted = false;
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    if (whileRunning && !acted && whileRunning.when.test(output)) {
      acted = true;
      whileRunning.then(child.pid!);
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const killer = setTimeout(() => child.kill('SIGKILL'), 40_000);
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, lines: output.split('\n').filter(Boolean), ms: Date.now() - started });
    }),
  );
}

/** Every line parsed as JSON: it fails on the first line that is not. */
const parsed = (lines: string[]): LogLine[] => lines.map((line) => JSON.parse(line) as LogLine);
const FATAL = 60;

describe('start-up: loud, bounded, one line per failure, and links that follow PORT', () => {
  let installation: Installation;
  let closedPort: number;

  beforeAll(async () => {
    installation = await createInstallation('startup');
    closedPort = await freePort();
  });
  afterAll(() => installation.remove());

  const env = (overrides: Record<string, string>): Record<string, string> => ({
    ...installation.env,
    LOG_LEVEL: 'info',
    INBOUND_SMTP_PORT: '0',
    ...overrides,
  });

  it('stops within STARTUP_TIMEOUT_MS when Redis does not answer, naming REDIS_URL, its address and what to do', async () => {
    const exit = await runToExit(env({ REDIS_URL: `redis://127.0.0.1:${closedPort}`, STARTUP_TIMEOUT_MS: '2000', PORT: '0' }));
    expect(exit.code).toBe(1);
    expect(exit.ms).toBeLessThan(15_000);
    const lines = parsed(exit.lines);
    expect(lines.find((line) => line.msg.startsWith('Waiting'))?.msg).toMatch(
      new RegExp(`^Waiting up to 2 s for Redis at redis://127\\.0\\.0\\.1:${closedPort} \\(REDIS_URL\\): connect ECONNREFUSED`),
    );
    expect(lines.at(-1)).toMatchObject({
      level: FATAL,
      msg: expect.stringMatching(
        new RegExp(
          `^Redis at redis://127\\.0\\.0\\.1:${closedPort} \\(REDIS_URL\\) did not answer within 2 s .*start Redis .*set REDIS_URL`,
        ),
      ),
    });
    expect(exit.lines.join('\n')).not.toMatch(/Unhandled error event|\n\s+at /);
  });

  it('stops the same way when PostgreSQL does not answer, naming DATABASE_URL', async () => {
    const databaseUrl = `postgres://postgres:secret@127.0.0.1:${closedPort}/mailroom`;
    const exit = await runToExit(env({ DATABASE_URL: databaseUrl, STARTUP_TIMEOUT_MS: '2000', PORT: '0' }));
    expect(exit.code).toBe(1);
    expect(parsed(exit.lines).at(-1)).toMatchObject({
      level: FATAL,
      msg: expect.stringMatching(
        new RegExp(`^PostgreSQL at postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${closedPort}/mailroom \\(DATABASE_URL\\) did not answer`),
      ),
    });
    expect(exit.lines.join('\n')).not.toContain('secret');
  });

  it('honours SIGTERM while it waits for a store', async () => {
    let signalledAt = 0;
    const exit = await runToExit(env({ REDIS_URL: `redis://127.0.0.1:${closedPort}`, STARTUP_TIMEOUT_MS: '60000', PORT: '0' }), {
      when: /Waiting up to 60 s/,
      then: (pid) => {
        signalledAt = Date.now();
        process.kill(pid, 'SIGTERM');
      },
    });
    expect(signalledAt).toBeGreaterThan(0);
    expect(exit.code).toBe(143);
    expect(parsed(exit.lines).at(-1)?.msg).toBe('SIGTERM during start-up: stopped');
  });

  it('answers a bad value in one line that echoes it, and a port in use in one line naming PORT', async () => {
    const invalid = await runToExit(env({ PORT: 'abc' }));
    expect(invalid.code).toBe(1);
    expect(parsed(invalid.lines)).toEqual([
      expect.objectContaining({ level: FATAL, msg: 'Invalid configuration: PORT must be an integer number (got "abc")' }),
    ]);

    const taken: Server = createServer();
    const port = await new Promise<number>((resolve) => taken.listen(0, () => resolve((taken.address() as { port: number }).port)));
    try {
      const inUse = await runToExit(env({ PORT: String(port) }));
      expect(inUse.code).toBe(1);
      expect(parsed(inUse.lines).filter((line) => line.level >= 50)).toEqual([
        expect.objectContaining({
          level: FATAL,
          msg: `Port ${port} (PORT) is already in use by another process: stop that process, or set PORT to a free port`,
        }),
      ]);
    } finally {
      taken.close();
    }
  });

  it('writes text instead of JSON only when LOG_FORMAT=pretty', async () => {
    const exit = await runToExit(env({ PORT: 'abc', LOG_FORMAT: 'pretty', NO_COLOR: '1' }));
    expect(exit.code).toBe(1);
    expect(exit.lines).toHaveLength(1);
    expect(exit.lines[0]).toMatch(/FATAL.*Invalid configuration: PORT must be an integer number \(got "abc"\)/);
    expect(() => JSON.parse(exit.lines[0])).toThrow();
  });

  describe('started on another PORT without PUBLIC_URL', () => {
    let app: AppProcess;
    let port: number;
    let base: string;

    beforeAll(async () => {
      port = await freePort();
      base = `http://127.0.0.1:${port}`;
      const { PUBLIC_URL: _unset, ...shared } = env({ PORT: String(port), WORKER_PROCESSES: '2' });
      app = startAppProcess('startup', shared);
      await waitFor(
        'the service to listen',
        () =>
          fetch(`${base}/health`).then(
            (r) => r.status,
            () => 0,
          ),
        (status) => status === 200,
        45_000,
      );
    });
    afterAll(() => app.stop());

    it('gives links, redirects and the API document the port it listens on', async () => {
      const own = `http://localhost:${port}`;
      const notFound = await fetch(`${base}/no/such/route`);
      expect(((await notFound.json()) as { documentation: string }).documentation).toBe(`${own}/docs#errors`);

      const form = await fetch(`${base}/api/forms`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${installation.operatorKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Contact', to: 'owner@example.com', subject: 'Hello' }),
      });
      expect(form.status).toBeLessThan(300);
      const { submitUrl } = (await form.json()) as { submitUrl: string };
      expect(submitUrl).toMatch(new RegExp(`^${own}/f/frm_`));
      // A browser's form post: Node's fetch() says Sec-Fetch-Mode: cors, a script's request, answered in JSON.
      const thanks = await new Promise<IncomingMessage>((resolve, reject) =>
        httpRequest(
          submitUrl.replace(own, base),
          {
            method: 'POST',
            headers: {
              'Content-Type': 'application/x-www-form-urlencoded',
              Accept: 'text/html',
              Authorization: `Bearer ${installation.operatorKey}`,
            },
          },
          resolve,
        )
          .on('error', reject)
          .end('email=visitor%40example.org&message=hi'),
      );
      thanks.resume();
      expect(thanks.statusCode).toBe(303);
      expect(thanks.headers.location).toMatch(new RegExp(`^${own}/`));

      // "Try it out" calls the origin that served the page; PUBLIC_URL stays listed.
      const document = (await (await fetch(`${base}/docs-json`)).json()) as { servers: { url: string }[] };
      expect(document.servers.map((server) => server.url)).toEqual([base, own]);
      expect(await (await fetch(`${base}/docs/swagger-ui-init.js`)).text()).toContain(`"url": "${base}"`);
    });

    it('logs JSON from its first line, says each start-up warning once, and where its docs are', () => {
      const lines = parsed(app.output().split('\n').filter(Boolean));
      expect(lines.filter((line) => line.msg.startsWith('DOMAIN_VERIFICATION=skip'))).toHaveLength(1);
      expect(lines.filter((line) => line.msg.startsWith('Mail uses local defaults'))).toEqual([
        expect.objectContaining({ msg: expect.stringContaining('FORMS_FROM') }),
      ]);
      expect(lines.find((line) => line.msg.startsWith('Listening on port'))?.msg).toBe(
        `Listening on port ${port}: API docs at http://localhost:${port}/docs`,
      );
    });
  });
});
