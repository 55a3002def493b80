import type { Repository } from 'typeorm';
import type { AppConfigService } from '../../config/app-config.service';
import type { ListsService } from '../../lists/lists.service';
import { FanOutInterrupted } from './list-send-attempts';
import type { ListSend } from './list-send.entity';
import { ListSendsService } from './list-sends.service';

/**
 * `run` over a list send row held in memory: the fake repository answers the statements that count a run, give it
 * back and record a failed run, and refuses any other; the list cannot be read (the connection was reset).
 */
function service(row: Pick<ListSend, 'id' | 'status' | 'attempts' | 'cursor'>) {
  const statements: string[] = [];
  const sends = {
    findOneBy: () => Promise.resolve({ ...row }),
    query: (sql: string) => {
      statements.push(sql);
      if (sql.includes('SET attempts = attempts + 1')) return Promise.resolve([{ attempts: ++row.attempts }]);
      if (sql.includes('SET attempts = attempts - 1')) return Promise.resolve(row.attempts > 0 ? [[], row.attempts--] : [[], 0]);
      if (sql.includes('SET last_error')) return Promise.resolve([[], 1]);
      return Promise.reject(new Error(`unexpected statement: ${sql}`));
    },
  };
  const config = { env: { LIST_SEND_MAX_ATTEMPTS: 3, LIST_SEND_BATCH_SIZE: 2 } } as unknown as AppConfigService;
  const lists = { subscribedPage: () => Promise.reject(new Error('connection reset')) } as unknown as ListsService;
  const none = {} as never;
  const listSends = new ListSendsService(sends as unknown as Repository<ListSend>, lists, none, none, none, none, none, none, config);
  return { listSends, statements };
}

describe('ListSendsService.run', () => {
  it('gives back the count of a run that the worker shutdown interrupted, and rejects for a retry', async () => {
    const row = { id: 'lsnd_1', status: 'sending' as const, attempts: 1, cursor: 'b@example.org' };
    const { listSends, statements } = service(row);
    await expect(listSends.run(row.id, () => true)).rejects.toBeInstanceOf(FanOutInterrupted);
    // Counted as its 2nd run, then given back: the send still has 2 of its 3 runs left.
    expect(row.attempts).toBe(1);
    expect(statements).toHaveLength(2);
  });

  it('keeps the count of a run that failed otherwise', async () => {
    const row = { id: 'lsnd_2', status: 'queued' as const, attempts: 1, cursor: null };
    const { listSends, statements } = service(row);
    await expect(listSends.run(row.id, () => false)).rejects.toThrow('connection reset');
    expect(row.attempts).toBe(2);
    expect(statements.filter((sql) => sql.includes('attempts - 1'))).toEqual([]);
  });
});
