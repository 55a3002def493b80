import { randomBytes } from 'node:crypto';

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
