import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { AppConfigService } from '../config/app-config.service';
import { maskedUrl } from '../config/env.schema';
import { createRedisConnection } from '../redis/redis-connection';
import { StartupError } from './startup-error';

/** How long one attempt to reach a store may take, and the pause between attempts. */
const ATTEMPT_TIMEOUT_MS = 3000;
const RETRY_PAUSE_MS = 1000;

/** An answer of the store that waiting will not change (a wrong password, say): start-up stops at once. */
class Refused extends Error {}

export type StoreName = 'postgres' | 'redis';

interface Store {
  id: StoreName;
  name: string;
  variable: string;
  url: string;
  /** Resolves once the store answers; throws Refused when it answered "no". */
  reach(): Promise<void>;
}

/**
 * Waits, at most STARTUP_TIMEOUT_MS, until PostgreSQL and Redis answer, so that a store that is down or mistyped
 * stops start-up with one line naming the variable and what to do, instead of a hang or a raw ECONNREFUSED.
 * `onWaiting` is told once per store that start-up is waiting for it.
 */
export async function waitForStores(
  config: AppConfigService,
  onWaiting: (message: string) => void,
  only: StoreName[] = ['postgres', 'redis'],
): Promise<void> {
  const { DATABASE_URL, REDIS_URL, STARTUP_TIMEOUT_MS } = config.env;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  const stores: Store[] = [
    { id: 'postgres', name: 'PostgreSQL', variable: 'DATABASE_URL', url: DATABASE_URL, reach: () => reachPostgres(DATABASE_URL) },
    { id: 'redis', name: 'Redis', variable: 'REDIS_URL', url: REDIS_URL, reach: () => reachRedis(REDIS_URL) },
  ];
  const waited = stores.filter((store) => only.includes(store.id));
  await Promise.all(waited.map((store) => waitFor(store, deadline, STARTUP_TIMEOUT_MS, onWaiting)));
}

async function waitFor(store: Store, deadline: number, timeoutMs: number, onWaiting: (message: string) => void): Promise<void> {
  const where = `${store.name} at ${maskedUrl(store.url)} (${store.variable})`;
  let told = false;
  for (;;) {
    try {
      return await store.reach();
    } catch (err) {
      const reason = reasonOf(err);
      if (err instanceof Refused) throw new StartupError(`${where} refused the connection: ${reason}. Check ${store.variable}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new StartupError(
          `${where} did not answer within ${Math.round(timeoutMs / 1000)} s (${reason}): start ${store.name} ` +
            `(or \`docker compose up -d postgres redis\`), or set ${store.variable} to where it runs`,
        );
      }
      if (!told) onWaiting(`Waiting up to ${Math.round(timeoutMs / 1000)} s for ${where}: ${reason}`);
      told = true;
      await sleep(Math.min(RETRY_PAUSE_MS, left));
    }
  }
}

function reasonOf(err: unknown): string {
  const error = err as (Error & { code?: string }) | undefined;
  const message = error?.message || error?.code || String(err);
  // AggregateError (one refusal per address of "localhost") has no message of its own.
  const inner = (err as { errors?: Error[] } | undefined)?.errors?.[0]?.message;
  return (inner ?? message).split('\n')[0];
}

/** PostgreSQL error codes that waiting does not change: bad password, no such role, no access. */
const POSTGRES_REFUSALS = new Set(['28P01', '28000', '42501']);

async function reachPostgres(url: string): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: ATTEMPT_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === '3D000') return; // the server answers; start-up creates the database
    if (code && POSTGRES_REFUSALS.has(code)) throw new Refused((err as Error).message);
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function reachRedis(url: string): Promise<void> {
  const connection = createRedisConnection(url, {
    lazyConnect: true,
    connectTimeout: ATTEMPT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // connect() rejects with "Connection is closed"; the reason is in the last error event.
  let lastError: Error | undefined;
  connection.on('error', (err: Error) => (lastError = err));
  try {
    await connection.connect();
    await connection.ping();
  } catch (err) {
    const reason = lastError ?? (err as Error);
    if (/WRONGPASS|NOAUTH|NOPERM/.test(reason.message)) throw new Refused(reason.message);
    throw reason;
  } finally {
    connection.disconnect();
  }
}
