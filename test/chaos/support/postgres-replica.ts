import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from '../../support/free-port';
import { waitUntil } from './private-servers';

const run = promisify(execFile);

/** A hot standby of a PostgreSQL server, streaming from it: it answers reads and refuses writes. */
export interface PrivateReplica {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string;
  close(): Promise<void>;
}

/**
 * A streaming replica (pg_basebackup -R) of the server at `primaryPort` (a private one: trust auth, which
 * initdb also grants to replication connections from 127.0.0.1), on a spare port of its own.
 */
export async function startPrivateReplica(primaryPort: number): Promise<PrivateReplica> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-chaos-pg-replica-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const [{ stdout: uid }, { stdout: gid }] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    chownSync(dir, Number(uid.trim()), Number(gid.trim()));
  }
  const pg = (command: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', command, ...args]) : run(command, args);

  const stop = () => pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  try {
    // A fast checkpoint: the default spreads it over minutes.
    await pg('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      data,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    // A standby needs at least the primary's max_connections (startPrivatePostgres sets 200).
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c hot_standby=on -c max_connections=200`;
    await pg('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', 'start']);
    await waitUntil(`the replica on ${port} to take reads`, async () => {
      const client = new Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        return (await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')).rows[0].standby;
      } finally {
        await client.end();
      }
    });
  } catch (err) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
