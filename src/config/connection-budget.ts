import type { EnvSchema } from './env.schema';

/** How a process's connection budgets are shared out among its threads (APP_ROLE=all with worker threads). */
export interface ConnectionShares {
  /** Worker threads that run: WORKER_PROCESSES, fewer when a budget cannot give each of them a connection. */
  workerThreads: number;
  /** PostgreSQL connections of the thread that serves HTTP (or of the one thread, without worker threads). */
  httpDatabase: number;
  /** Each worker thread's connections, by slot: to PostgreSQL, and to the SMTP provider. */
  workers: { database: number; smtp: number }[];
}

type Budgets = Pick<EnvSchema, 'WORKER_PROCESSES' | 'DATABASE_POOL_SIZE' | 'SMTP_POOL_SIZE' | 'SMTP_URL'>;

/**
 * A thread's least share of the database budget: with one connection, a query made while a transaction holds it
 * would wait for ever.
 */
const MIN_DATABASE_SHARE = 2;

/**
 * DATABASE_POOL_SIZE and SMTP_POOL_SIZE are budgets of the process, so that more cores do not mean more connections.
 * Every thread gets at least MIN_DATABASE_SHARE database connections and one SMTP connection, so the budgets bound the
 * worker threads: at most DATABASE_POOL_SIZE / 2 − 1 (the HTTP thread takes a share) and, with SMTP_URL,
 * SMTP_POOL_SIZE. DATABASE_POOL_SIZE is divided
 * evenly among all the threads, the HTTP thread first and then the worker threads in order taking one more each while
 * the division leaves some; SMTP_POOL_SIZE likewise among the worker threads alone (the HTTP thread sends nothing).
 */
export function shareConnections(budgets: Budgets): ConnectionShares {
  const { DATABASE_POOL_SIZE: database, SMTP_POOL_SIZE: smtp } = budgets;
  const byDatabase = Math.floor(database / MIN_DATABASE_SHARE) - 1;
  const workerThreads = Math.max(0, Math.min(budgets.WORKER_PROCESSES, byDatabase, budgets.SMTP_URL ? smtp : Infinity));
  const [httpDatabase, ...workerDatabase] = evenShares(database, workerThreads + 1);
  const workerSmtp = evenShares(smtp, workerThreads);
  return {
    workerThreads,
    httpDatabase,
    // Without SMTP_URL there is no SMTP pool and its share is never used; the setting still has to be at least 1.
    workers: workerDatabase.map((share, slot) => ({ database: share, smtp: Math.max(1, workerSmtp[slot]) })),
  };
}

/** `total` in `parts` shares that differ by one at most, the larger ones first. */
export function evenShares(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));
}
