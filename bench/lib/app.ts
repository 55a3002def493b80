import { spawn, ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../test/support/free-port';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';

const ROOT = join(__dirname, '..', '..');
const DATABASE_SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A running Mailroom (src/main.ts in a child process, so the load generator does not share its CPU). */
export interface BenchApp {
  url: string;
  /** The operator's admin key (BOOTSTRAP_ADMIN_KEY). */
  operatorKey: string;
  databaseUrl: string;
  /** The app's process id (to sample its memory). */
  pid: number;
  /** Its Redis key prefix (Bull's queues are under `<prefix>bull`). */
  redisPrefix: string;
  stop(): Promise<void>;
}

/** A database of its own for one bench run; apps started on it create and migrate it. */
export function scratchDatabaseUrl(): string {
  return `${DATABASE_SERVER}/mailroom_bench_${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

export async function dropDatabase(url: string): Promise<void> {
  const client = new Client({ connectionString: `${DATABASE_SERVER}/postgres` });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${new URL(url).pathname.slice(1)}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** Runs SQL on the bench database (fixtures the API has no route for, such as account settings). */
export async function sql(databaseUrl: string, text: string, params: unknown[] = []): Promise<void> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(text, params);
  } finally {
    await client.end();
  }
}

/**
 * Boots the API like production (NODE_ENV=production, LOG_LEVEL=warn, APP_ROLE=api) on the given
 * database, with its own Redis key prefix; `env` adds or overrides variables, `nodeArgs` are given to node.
 */
export async function startApp(
  databaseUrl: string,
  env: Record<string, string> = {},
  options: { nodeArgs?: string[] } = {},
): Promise<BenchApp> {
  const port = await freePort();
  const operatorKey = `svc_sk_admin_${randomBytes(32).toString('hex')}`;
  const redisPrefix = env.REDIS_KEY_PREFIX ?? `mailroom-bench:${randomBytes(4).toString('hex')}:`;
  // BENCH_APP_NODE_ARGS profiles the app under load, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = [...(options.nodeArgs ?? []), ...(process.env.BENCH_APP_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
  const child = spawn(process.execPath, [...nodeArgs, '-r', '@swc-node/register', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      APP_ROLE: 'api',
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      REDIS_KEY_PREFIX: redisPrefix,
      ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      BOOTSTRAP_ADMIN_KEY: operatorKey,
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, child);
  return {
    url,
    operatorKey,
    databaseUrl,
    pid: child.pid!,
    redisPrefix,
    stop: async () => {
      await stopChild(child);
      const redis = new Redis(REDIS_URL);
      try {
        const keys = await redis.keys(`${redisPrefix}*`);
        if (keys.length) await redis.unlink(...keys);
      } finally {
        redis.disconnect();
      }
    },
  };
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the app exited with code ${child.exitCode} while starting`);
    try {
      if ((await fetch(`${url}/health/ready`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  child.kill('SIGKILL');
  throw new Error(`the app at ${url} did not become ready within 120 s`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
