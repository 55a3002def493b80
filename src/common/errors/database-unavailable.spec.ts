import { Logger } from '@nestjs/common';
import { createServer } from 'node:net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { PgProxy } from '../../../test/support/pg-proxy';
import { TEST_DATABASE_SERVER } from '../../../test/support/test-env';
import { DatabaseOutage, isDatabaseUnavailable } from './database-unavailable';

/** The error a promise rejects with (fails the test if it resolves). */
async function errorOf(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function dataSource(url: string, extra: Record<string, unknown> = {}, connectTimeoutMS = 2000): DataSource {
  return new DataSource({ type: 'postgres', url, connectTimeoutMS, extra: { max: 2, ...extra } });
}

const realServer = `${TEST_DATABASE_SERVER}/postgres`;

/** Real errors from node-postgres and TypeORM, from a real server and from a proxy that fails like an outage. */
describe('isDatabaseUnavailable', () => {
  let proxy: PgProxy;
  let db: DataSource;

  beforeEach(async () => {
    proxy = await PgProxy.start();
    db = await dataSource(proxy.url('postgres')).initialize();
  });
  afterEach(async () => {
    await proxy.close();
    await db.destroy().catch(() => undefined);
  });

  it('connection refused: nothing listens', async () => {
    const client = new Client({ connectionString: `postgres://postgres@127.0.0.1:${await closedPort()}/postgres` });
    const err = await errorOf(client.connect());
    expect(err.code).toBe('ECONNREFUSED');
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('connection refused through TypeORM once the server is gone', async () => {
    await proxy.refuse();
    const err = await errorOf(db.query('SELECT 1'));
    expect(isDatabaseUnavailable(err)).toBe(true);
    const again = await errorOf(db.query('SELECT 1'));
    expect(again.code).toBe('ECONNREFUSED');
    expect(isDatabaseUnavailable(again)).toBe(true);
  });

  it('connection terminated while a query runs', async () => {
    const running = errorOf(db.query('SELECT pg_sleep(5)'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    proxy.dropConnections();
    const err = await running;
    expect(err.message).toMatch(/Connection terminated unexpectedly/);
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('terminated by an administrator (57P01), as a fast shutdown does', async () => {
    const direct = await dataSource(realServer).initialize();
    const admin = new Client({ connectionString: realServer });
    await admin.connect();
    try {
      const runner = direct.createQueryRunner();
      await runner.connect();
      const [{ pid }] = await runner.query('SELECT pg_backend_pid() AS pid');
      const running = errorOf(runner.query('SELECT pg_sleep(5)'));
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      const err = await running;
      expect(err.code).toBe('57P01');
      expect(isDatabaseUnavailable(err)).toBe(true);
      await runner.release().catch(() => undefined);
    } finally {
      await admin.end();
      await direct.destroy();
    }
  });

  it('the database system is starting up (57P03)', async () => {
    await db.destroy();
    proxy.startingUp();
    const err = await errorOf(dataSource(proxy.url('postgres')).initialize());
    expect(err.code).toBe('57P03');
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('no answer within the connect time-out', async () => {
    await db.destroy();
    proxy.silent();
    const started = Date.now();
    const err = await errorOf(dataSource(proxy.url('postgres'), {}, 200).initialize());
    expect(Date.now() - started).toBeLessThan(2000);
    expect(err.message).toMatch(/Connection terminated due to connection timeout/);
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('no free pool connection within the time-out', async () => {
    const small = await dataSource(realServer, { max: 1 }, 200).initialize();
    const holder = small.createQueryRunner();
    await holder.connect();
    try {
      const err = await errorOf(small.query('SELECT 1'));
      expect(err.message).toMatch(/timeout exceeded when trying to connect/);
      expect(isDatabaseUnavailable(err)).toBe(true);
    } finally {
      await holder.release();
      await small.destroy();
    }
  });

  it('is false for errors that are the request’s or the code’s', async () => {
    // One query runner: a temp table lives on one connection.
    const runner = db.createQueryRunner();
    await runner.query('CREATE TEMP TABLE u (id int PRIMARY KEY, name text)');
    await runner.query('INSERT INTO u VALUES (1, $1)', ['a']);
    const refused = [
      await errorOf(runner.query('INSERT INTO u VALUES (1, $1)', ['b'])), // 23505 unique violation
      await errorOf(runner.query('INSERT INTO u VALUES (2, $1)', ['a\u0000b'])), // 22021 NUL
      await errorOf(runner.query('SELECT $1::jsonb', ['"\\ud800"'])), // 22P02 lone surrogate
      await errorOf(runner.query('SELEC 1')), // 42601 syntax error
      await errorOf(runner.query('SET statement_timeout = 50; SELECT pg_sleep(1)')), // 57014 cancelled
    ];
    await runner.release();
    expect(refused.map((e) => e.code)).toEqual(['23505', '22021', '22P02', '42601', '57014']);
    for (const err of refused) expect(isDatabaseUnavailable(err)).toBe(false);
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});

describe('DatabaseOutage', () => {
  it('logs an outage once, and its end once', () => {
    const error = jest.fn();
    const log = jest.fn();
    const outage = new DatabaseOutage({ error, log } as unknown as Logger);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    outage.connected();
    outage.failed(refused);
    outage.failed(refused);
    outage.failed(refused);
    expect(error).toHaveBeenCalledTimes(1);
    expect(error).toHaveBeenCalledWith(expect.stringContaining('connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)'));
    outage.connected();
    outage.connected();
    expect(log).toHaveBeenCalledTimes(1);
    expect(log).toHaveBeenCalledWith(expect.stringContaining('3 requests were answered 503'));
    outage.failed(refused);
    expect(error).toHaveBeenCalledTimes(2);
  });
});
