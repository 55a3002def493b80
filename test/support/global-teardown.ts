import Redis from 'ioredis';
import { Client } from 'pg';
import { databaseUrl, redisPrefixOfRun, TEST_REDIS_URL, testRunId } from './test-env';

/** Drops every database and Redis key this run made. */
export default async function globalTeardown(): Promise<void> {
  const runId = testRunId();
  const client = new Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
      `mailroom_test_${runId}_%`,
    ]);
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
  const redis = new Redis(TEST_REDIS_URL);
  try {
    await deleteKeys(redis, `${redisPrefixOfRun(runId)}*`);
  } finally {
    redis.disconnect();
  }
}

export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}
