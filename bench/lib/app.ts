import { readFileSync } from 'node:fs';
import { spawn, ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../test/support/free-port';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { isAlive, ProcessTree, trackProcessTree, untrackProcessTree } from './process-tree';

const ROOT = join(__dirname, '..', '..');
const DATABASE_SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A running Mailroom (`npm start`'s command, dist/main.js, in a child process, so the load generator does not share its CPU). */
export interface BenchApp {
  url: string;
  /** The operator's admin key (BOOTSTRAP_ADMIN_KEY). */
  operatorKey: string;
  databaseUrl: string;
  /** The app's process id (its worker threads are in it; anything it forks is its child). */
  pid: number;
  /** Its Redis key prefix (Bull's queues are under `<prefix>bull`). */
  redisPrefix: string;
  /** Resident memory of the app's process and all its descendants, sampled every 50 ms. */
  rssMb(): number;
  /** The largest sum of that memory since the app was started. */
  peakRssMb(): number;
  /** The most processes the app had at once (1, unless it forks). */
  peakProcesses(): number;
  /** The most threads its processes had at once (worker threads, libuv's pool and V8's included). */
  peakThreads(): number;
  /**
   * Stops the app and waits for its descendants to leave too. The Redis keys under its prefix are deleted
   * unless the caller chose the prefix (apps sharing a queue: the caller deletes them when done).
   */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Flags for node, e.g. `--max-old-space-size=256`. */
  nodeArgs?: string[];
  /** CPUs the app and everything it forks may run on, as `taskset -c` takes them: "0", "0,1". */
  cpuList?: string;
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
 * `npm start`'s command (package.json): its variables, node's flags and the compiled entry point, which
 * bench/run.ts builds first. Run without npm, so that the app is the child process the bench watches.
 */
function startCommand(): { env: Record<string, string>; nodeArgs: string[]; script: string } {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.split(/\s+/).filter(Boolean);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0])) {
    const [name, value] = words.shift()!.split('=');
    env[name] = value;
  }
  if (words.shift() !== 'node') throw new Error(`npm start is not "node …": ${pkg.scripts.start}`);
  return { env, nodeArgs: words.slice(0, -1), script: words[words.length - 1] };
}

/**
 * Boots the API like production (NODE_ENV=production, LOG_LEVEL=warn, APP_ROLE=api) on the given
 * database, with its own Redis key prefix; `env` adds or overrides variables. The memory of the app's
 * process tree is sampled from its start until it has stopped (bench/lib/process-tree.ts).
 */
export async function startApp(databaseUrl: string, env: Record<string, string> = {}, options: StartOptions = {}): Promise<BenchApp> {
  const port = await freePort();
  const operatorKey = `svc_sk_admin_${randomBytes(32).toString('hex')}`;
  const redisPrefix = env.REDIS_KEY_PREFIX ?? `mailroom-bench:${randomBytes(4).toString('hex')}:`;
  // BENCH_APP_NODE_ARGS profiles the app under load, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = [...(options.nodeArgs ?? []), ...(process.env.BENCH_APP_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
  const start = startCommand();
  const command = [process.execPath, ...start.nodeArgs, ...nodeArgs, start.script];
  // taskset execs node, so the child's pid is the app's; the affinity is inherited by whatever it forks.
  if (options.cpuList) command.unshift('taskset', '-c', options.cpuList);
  const child = spawn(command[0], command.slice(1), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...start.env,
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
  const tree = trackProcessTree(child.pid!);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url, child);
  } catch (err) {
    await stopTree(child, tree);
    throw err;
  }
  return {
    url,
    operatorKey,
    databaseUrl,
    pid: child.pid!,
    redisPrefix,
    rssMb: () => tree.rssMb(),
    peakRssMb: () => tree.peakRssMb(),
    peakProcesses: () => tree.peakProcesses(),
    peakThreads: () => tree.peakThreads(),
    stop: async () => {
      await stopTree(child, tree);
      if (env.REDIS_KEY_PREFIX) return;
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
    if (hasExited(child)) throw new Error(`the app exited (${child.exitCode ?? child.signalCode}) while starting`);
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

/** SIGTERM to the app; its forked workers must leave with it: any left after 10 s is killed and reported. */
async function stopTree(child: ChildProcess, tree: ProcessTree): Promise<void> {
  try {
    // Taken before: once the app has exited, its orphans are init's children.
    const descendants = tree.descendants();
    await stopChild(child);
    const deadline = Date.now() + 10_000;
    while (descendants.some(isAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const left = descendants.filter(isAlive);
    if (left.length) {
      console.warn(`  ${left.length} process(es) of the app ${child.pid} outlived it by 10 s (${left.join(', ')}): killed`);
      for (const pid of left) process.kill(pid, 'SIGKILL');
    }
  } finally {
    untrackProcessTree(tree);
  }
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (hasExited(child)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
