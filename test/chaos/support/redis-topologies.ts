import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { freePort } from '../../support/free-port';
import { waitUntil } from './private-servers';

const run = promisify(execFile);

/** redis-server processes of a test's own, on spare ports, keeping nothing on disk. */
class RedisProcesses {
  readonly dir = mkdtempSync(join(tmpdir(), 'mailroom-redis-topology-'));
  private readonly children = new Map<number, ChildProcess>();

  async start(port: number, args: string[], configFile?: string): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        ...(configFile ? [configFile] : []),
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        ...args,
      ],
      { stdio: 'ignore' },
    );
    this.children.set(port, child);
    await waitUntil(`redis-server on ${port}`, async () => (await command(port, 'PING')) === 'PONG');
  }

  /** SIGKILL: the server is gone at once, as when its host dies. */
  async kill(port: number): Promise<void> {
    const child = this.children.get(port);
    this.children.delete(port);
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.children.keys()].map((port) => this.kill(port)));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** One command on a connection of its own that neither retries nor queues. */
export async function command(port: number, ...args: string[]): Promise<unknown> {
  const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return await probe.call(args[0], ...args.slice(1));
  } finally {
    probe.disconnect();
  }
}

export interface PrivateRedisCluster {
  /** redis-cluster://127.0.0.1:<port>,… */
  url: string;
  ports: number[];
  /** Every key of every node, with the port of the node that holds it. */
  keys(): Promise<{ key: string; port: number }[]>;
  close(): Promise<void>;
}

/** A Redis Cluster of `size` masters and no replicas (redis-cli --cluster create), its slots spread over all. */
export async function startPrivateRedisCluster(size = 3): Promise<PrivateRedisCluster> {
  const processes = new RedisProcesses();
  const ports: number[] = [];
  try {
    // The cluster bus port is chosen too: the default (port + 10000) may be taken or past 65535.
    const spare = await freePorts(2 * size);
    ports.push(...spare.slice(0, size));
    const bus = new Map(ports.map((port, i) => [port, spare[size + i]]));
    await Promise.all(
      ports.map((port) =>
        processes.start(port, [
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(bus.get(port)),
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '2000',
        ]),
      ),
    );
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    await waitUntil('the cluster to be ok on every node', async () => {
      const states = await Promise.all(ports.map((port) => command(port, 'CLUSTER', 'INFO')));
      return states.every((info) => String(info).includes('cluster_state:ok'));
    });
  } catch (err) {
    await processes.close();
    throw err;
  }
  return {
    url: `redis-cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`,
    ports,
    keys: async () =>
      (await Promise.all(ports.map(async (port) => ((await command(port, 'KEYS', '*')) as string[]).map((key) => ({ key, port }))))).flat(),
    close: () => processes.close(),
  };
}

export interface PrivateSentinel {
  /** redis-sentinel://127.0.0.1:<sentinel port>/mymaster */
  url: string;
  /** The port of the master the Sentinel reports now. */
  masterPort(): Promise<number>;
  /** Kills the master and waits until the Sentinel has promoted the replica; returns the new master's port. */
  failOver(): Promise<number>;
  close(): Promise<void>;
}

const MASTER_NAME = 'mymaster';

/**
 * A master, its replica, and one Sentinel watching them (quorum 1, a master counts as down after 1 s), so
 * that killing the master promotes the replica within a few seconds.
 */
export async function startPrivateSentinel(): Promise<PrivateSentinel> {
  const processes = new RedisProcesses();
  const [master, replica, sentinel] = await freePorts(3);
  const masterPort = async () => Number(((await command(sentinel, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)) as string[])[1]);
  try {
    await processes.start(master, []);
    await processes.start(replica, ['--replicaof', '127.0.0.1', String(master)]);
    await waitUntil('the replica to follow the master', async () =>
      String(await command(replica, 'INFO', 'replication')).includes('master_link_status:up'),
    );
    // Sentinel rewrites its configuration file: it must be one of its own.
    const configFile = join(processes.dir, 'sentinel.conf');
    writeFileSync(
      configFile,
      [
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master} 1`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 5000`,
        '',
      ].join('\n'),
    );
    await processes.start(sentinel, ['--sentinel'], configFile);
    await waitUntil('the Sentinel to know the master and its replica', async () => {
      const replicas = (await command(sentinel, 'SENTINEL', 'REPLICAS', MASTER_NAME)) as unknown[];
      return (await masterPort()) === master && replicas.length === 1;
    });
  } catch (err) {
    await processes.close();
    throw err;
  }
  return {
    url: `redis-sentinel://127.0.0.1:${sentinel}/${MASTER_NAME}`,
    masterPort,
    failOver: async () => {
      await processes.kill(master);
      await waitUntil('the Sentinel to promote the replica', async () => (await masterPort()) === replica, 30_000);
      await waitUntil('the replica to take writes', async () =>
        String(await command(replica, 'INFO', 'replication')).includes('role:master'),
      );
      return replica;
    },
    close: () => processes.close(),
  };
}
