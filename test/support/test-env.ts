import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** Where the e2e tests keep their data: never a database or key space a person uses. */
export const TEST_DATABASE_SERVER = process.env.TEST_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export function testRunId(): string {
  const id = process.env.MAILROOM_TEST_RUN;
  if (!id) throw new Error('MAILROOM_TEST_RUN is not set: run the e2e tests through jest (globalSetup)');
  return id;
}

export const templateDatabase = (runId: string) => `mailroom_test_${runId}_template`;
export const redisPrefixOfRun = (runId: string) => `mailroom-test:${runId}:`;

export function databaseUrl(name: string): string {
  return `${TEST_DATABASE_SERVER}/${name}`;
}

export function shortRandom(): string {
  return randomBytes(4).toString('hex');
}

/** A fresh, migrated database of this run (a copy of the template); dropped with the run. */
export async function cloneTemplateDatabase(): Promise<string> {
  const runId = testRunId();
  const name = `mailroom_test_${runId}_${shortRandom()}`;
  await withAdminClient((client) => client.query(`CREATE DATABASE "${name}" TEMPLATE "${templateDatabase(runId)}"`));
  return name;
}

export async function dropDatabase(name: string): Promise<void> {
  await withAdminClient((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

async function withAdminClient<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
