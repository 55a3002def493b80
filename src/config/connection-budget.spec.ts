import { evenShares, shareConnections } from './connection-budget';

const budgets = (workers: number, database: number, smtp: number) => ({
  WORKER_PROCESSES: workers,
  DATABASE_POOL_SIZE: database,
  SMTP_POOL_SIZE: smtp,
  SMTP_URL: 'smtp://provider.example:587' as string | undefined,
});
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe('shareConnections', () => {
  it('gives the one thread the whole database budget without worker threads', () => {
    expect(shareConnections(budgets(0, 20, 10))).toEqual({ workerThreads: 0, httpDatabase: 20, workers: [] });
  });

  it('divides the database budget among the HTTP thread and the worker threads, the SMTP budget among the workers', () => {
    expect(shareConnections(budgets(6, 14, 6))).toEqual({
      workerThreads: 6,
      httpDatabase: 2,
      workers: Array(6).fill({ database: 2, smtp: 1 }),
    });
    expect(shareConnections(budgets(4, 11, 6))).toEqual({
      workerThreads: 4,
      httpDatabase: 3,
      workers: [
        { database: 2, smtp: 2 },
        { database: 2, smtp: 2 },
        { database: 2, smtp: 1 },
        { database: 2, smtp: 1 },
      ],
    });
    expect(shareConnections(budgets(1, 20, 10))).toEqual({ workerThreads: 1, httpDatabase: 10, workers: [{ database: 10, smtp: 10 }] });
  });

  it('never hands out more than the budgets, whatever the thread count', () => {
    for (const workers of [1, 2, 3, 7, 15, 31, 64]) {
      for (const database of [1, 2, 5, 20, 97]) {
        for (const smtp of [1, 3, 10, 100]) {
          const shares = shareConnections(budgets(workers, database, smtp));
          expect(shares.httpDatabase + sum(shares.workers.map((w) => w.database))).toBe(database);
          if (shares.workerThreads > 0) expect(sum(shares.workers.map((w) => w.smtp))).toBe(smtp);
          expect(Math.min(shares.httpDatabase, ...shares.workers.flatMap((w) => [w.database, w.smtp]))).toBeGreaterThanOrEqual(1);
          if (shares.workerThreads > 0)
            expect(Math.min(shares.httpDatabase, ...shares.workers.map((w) => w.database))).toBeGreaterThanOrEqual(2);
          expect(shares.workers).toHaveLength(shares.workerThreads);
        }
      }
    }
  });

  it('runs fewer worker threads when a budget cannot give each two database connections and one SMTP connection', () => {
    expect(shareConnections(budgets(15, 8, 10)).workerThreads).toBe(3);
    expect(shareConnections(budgets(15, 20, 10)).workerThreads).toBe(9);
    expect(shareConnections(budgets(15, 40, 6)).workerThreads).toBe(6);
    expect(shareConnections(budgets(4, 3, 10)).workerThreads).toBe(0);
    // Without SMTP_URL the provider's budget bounds nothing.
    expect(shareConnections({ ...budgets(15, 40, 3), SMTP_URL: undefined }).workerThreads).toBe(15);
  });
});

describe('evenShares', () => {
  it('splits a total into shares that differ by one at most, larger first', () => {
    expect(evenShares(10, 7)).toEqual([2, 2, 2, 1, 1, 1, 1]);
    expect(evenShares(6, 3)).toEqual([2, 2, 2]);
    expect(evenShares(5, 0)).toEqual([]);
  });
});
