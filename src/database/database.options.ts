import { join } from 'node:path';
import { Client, type Pool } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { SnakeNamingStrategy } from './snake-naming.strategy';

/**
 * How long a connection may take to open, and a request may wait for a free pooled one: without it a request
 * hangs while PostgreSQL's host does not answer or the pool stays busy; with it, it gets a 503.
 */
export const DATABASE_CONNECT_TIMEOUT_MS = 5000;

/**
 * The one description of Mailroom's database: the app, the migration runner and the TypeORM CLI use it. With
 * `readUrl` (a replica) TypeORM keeps a second pool there, which only readPool() hands out: everything else,
 * reads included, stays on `url`, so nothing reads its own writes from a replica that lags. `poolSize` bounds each
 * pool: the app passes its thread's share of DATABASE_POOL_SIZE; the migration runner and the CLI use a few at most.
 */
export function databaseOptions(url: string, readUrl?: string, poolSize = 20): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    ...(readUrl ? { replication: { master: { url }, slaves: [{ url: readUrl }], defaultMode: 'master' } } : {}),
    entities: [join(__dirname, '..', '**', '*.entity.{ts,js}')],
    migrations: [join(__dirname, 'migrations', '*.{ts,js}')],
    namingStrategy: new SnakeNamingStrategy(),
    synchronize: false,
    migrationsRun: false,
    connectTimeoutMS: DATABASE_CONNECT_TIMEOUT_MS, // node-postgres' connectionTimeoutMillis
    extra: { max: poolSize },
  };
}

/** The pool of DATABASE_URL (TypeORM's driver holds node-postgres' pool as `master`). */
export function mainPool(dataSource: DataSource): Pool {
  return (dataSource.driver as PostgresDriver).master as Pool;
}

/** Calls `listener` each time the pool opens a connection. */
export function onNewConnection(dataSource: DataSource, listener: () => void): void {
  mainPool(dataSource).on('connect', listener);
}

/** The pool of the read replica (DATABASE_READ_URL), or the main one without it: for reads that may lag. */
export function readPool(dataSource: DataSource): Pool {
  const driver = dataSource.driver as PostgresDriver;
  return (driver.slaves[0] ?? driver.master) as Pool;
}

/** Creates the database named in the URL if it does not exist yet (D-34). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: DATABASE_CONNECT_TIMEOUT_MS });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // another instance created it meanwhile
      });
    }
  } finally {
    await client.end();
  }
}

const MIGRATION_LOCK = 0x6d61696c; // "mail": one migration runner at a time across instances

/** Runs pending migrations under an advisory lock, so instances starting together do not race. */
export async function runMigrations(url: string): Promise<string[]> {
  const dataSource = new DataSource(databaseOptions(url));
  await dataSource.initialize();
  try {
    await dataSource.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await dataSource.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await dataSource.destroy();
  }
}
