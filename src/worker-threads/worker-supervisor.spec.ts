import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { WorkerSupervisor } from './worker-supervisor';

const FIXTURE = require.resolve('./fixtures/worker-thread.fixture.js');

describe('WorkerSupervisor', () => {
  let dir: string;
  let logFile: string;
  let supervisor: WorkerSupervisor | undefined;
  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mailroom-supervisor-'));
    logFile = join(dir, 'log');
  });
  afterEach(async () => {
    await supervisor?.onApplicationShutdown();
    await rm(dir, { recursive: true, force: true });
  });

  const lines = async () => (await readFile(logFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const until = async (check: (log: string[]) => boolean, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!check(await lines())) {
      if (Date.now() > deadline) throw new Error(`timed out; log:\n${(await lines()).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const savedEnv = { ...process.env };
  afterEach(() => {
    process.env = savedEnv;
  });
  /** The threads get the process's environment, as the main thread's configuration came from it. */
  const start = (mode: 'steady' | 'crash') => {
    Object.assign(process.env, { FIXTURE_LOG: logFile, FIXTURE_MODE: mode, INBOUND_SMTP_PORT: '2525' });
    const config = AppConfigService.fromEnv({ NODE_ENV: 'test', WORKER_PROCESSES: '2', SHUTDOWN_TIMEOUT_MS: '2000' });
    supervisor = new WorkerSupervisor(config, FIXTURE);
    supervisor.onApplicationBootstrap();
  };

  it('starts WORKER_PROCESSES threads, the first alone with the inbound SMTP port, and drains them on stop', async () => {
    start('steady');
    await until((log) => log.length === 2);
    expect((await lines()).map((l) => l.replace(/ \d+ /, ' ')).sort()).toEqual(['started inbound=0', 'started inbound=2525']);
    expect(supervisor!.running).toBe(2);

    const stoppedAt = Date.now();
    await supervisor!.stop('SIGTERM');
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(200); // waited for the drain
    const log = await lines();
    expect(log.filter((l) => l.startsWith('shutdown:SIGTERM'))).toHaveLength(2);
    expect(log.filter((l) => l.startsWith('drained'))).toHaveLength(2);
    expect(supervisor!.running).toBe(0);
  });

  it('starts a thread again when it dies, later each time it dies young', async () => {
    start('crash');
    // Restarted 0.5 s, then 1 s after the first two deaths of each slot: three starts per slot in about 2 s.
    await until((log) => log.filter((l) => l.startsWith('started')).length >= 6, 10_000);
    const starts = (await lines()).filter((l) => l.startsWith('started'));
    expect(new Set(starts.map((l) => l.split(' ')[1])).size).toBe(starts.length); // a new thread every time
    expect(starts.filter((l) => l.endsWith('inbound=2525')).length).toBeGreaterThanOrEqual(3); // the first slot is restarted as itself
  });
});
