import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Redis from 'ioredis';
import { deleteKeys } from './global-teardown';
import { cloneTemplateDatabase, databaseUrl, dropDatabase, redisPrefixOfRun, shortRandom, TEST_REDIS_URL, testRunId } from './test-env';

const ROOT = join(__dirname, '..', '..');
/** The end of a process's output kept to show when it dies early. */
const OUTPUT_KEPT = 32 * 1024;

/** src/main.ts in a process of its own, as a deployment runs it. */
export interface AppProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** The last 32 KB of its stdout and stderr. */
  output(): string;
  /** True while the process runs. */
  readonly running: boolean;
  /** SIGTERM (a graceful shutdown), then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

const started = new Set<AppProcess>();
// The processes must not outlive the test run, even when jest is stopped in the middle.
process.once('exit', () => {
  for (const app of started) if (app.running) app.child.kill('SIGKILL');
});

/**
 * Starts `node -r @swc-node/register src/main.ts` with exactly `env` (plus PATH and HOME). An exit before
 * stop() is reported on stderr with the process's last output, so that a crash does not pass as a time-out.
 */
export function startAppProcess(name: string, env: Record<string, string>): AppProcess {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', join('src', 'main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-OUTPUT_KEPT));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let stopping = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`${name} exited (code ${code}, signal ${signal}) before it was stopped:\n${output}\n`);
  });

  const app: AppProcess = {
    name,
    child,
    output: () => output,
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    stop: async (graceMs = 10_000) => {
      stopping = true;
      if (app.running) {
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        child.kill('SIGTERM');
        await exited;
        clearTimeout(timer);
      }
      started.delete(app);
    },
  };
  started.add(app);
  return app;
}

/** What the processes of one installation share, as a ConfigMap and a Secret give every pod the same. */
export interface Installation {
  /** The shared environment: a copy of the template database, a Redis key space of its own, the keys. */
  env: Record<string, string>;
  /** BOOTSTRAP_ADMIN_KEY: an admin key of the operator account. */
  operatorKey: string;
  /** Drops the database and the Redis keys (the processes must be stopped first). */
  remove(): Promise<void>;
}

export async function createInstallation(label: string): Promise<Installation> {
  const databaseName = await cloneTemplateDatabase();
  const redisPrefix = `${redisPrefixOfRun(testRunId())}${label}-${shortRandom()}:`;
  const operatorKey = `svc_sk_admin_${randomBytes(32).toString('hex')}`;
  return {
    operatorKey,
    env: {
      NODE_ENV: 'test',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      DATABASE_URL: databaseUrl(databaseName),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: redisPrefix,
      PUBLIC_URL: 'http://mailroom.test',
      ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      BOOTSTRAP_ADMIN_KEY: operatorKey,
      DOMAIN_VERIFICATION: 'skip',
    },
    remove: async () => {
      await dropDatabase(databaseName);
      const redis = new Redis(TEST_REDIS_URL);
      await deleteKeys(redis, `${redisPrefix}*`).finally(() => redis.disconnect());
    },
  };
}
