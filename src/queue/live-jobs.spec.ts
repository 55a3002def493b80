import type { Queue } from 'bull';
import { liveJobIds } from './live-jobs';

/** A queue whose Redis holds `jobs` (id -> the finished set it is in, or null) and records the removals. */
function fakeQueue(jobs: Record<string, 'failed' | 'completed' | null>) {
  const removed: string[] = [];
  const toKey = (name: string) => `bull:q:${name}`;
  const pipeline = () => {
    const answers: [null, unknown][] = [];
    const chain = {
      exists: (key: string) => (answers.push([null, key.slice(toKey('').length) in jobs ? 1 : 0]), chain),
      zscore: (key: string, id: string) => (answers.push([null, jobs[id] && toKey(jobs[id]) === key ? '1' : null]), chain),
      exec: () => Promise.resolve(answers),
    };
    return chain;
  };
  const queue = {
    client: { pipeline },
    toKey,
    getJob: (id: string) => Promise.resolve(id in jobs ? { remove: () => Promise.resolve(void removed.push(id)) } : null),
  };
  return { queue: queue as unknown as Queue, removed };
}

describe('liveJobIds', () => {
  it('answers the jobs that exist and are in none of the finished sets, and removes the finished ones', async () => {
    const { queue, removed } = fakeQueue({ waiting: null, failed: 'failed', completed: 'completed' });
    const live = await liveJobIds(queue, ['waiting', 'failed', 'completed', 'lost'], ['failed', 'completed']);
    expect([...live]).toEqual(['waiting']);
    expect(removed).toEqual(['failed', 'completed']);
  });

  it('counts a completed job as live when only failed ones are finished', async () => {
    const { queue, removed } = fakeQueue({ kept: 'completed', failed: 'failed' });
    expect([...(await liveJobIds(queue, ['kept', 'failed'], ['failed']))]).toEqual(['kept']);
    expect(removed).toEqual(['failed']);
  });

  it('asks Redis nothing for no ids', async () => {
    const { queue } = fakeQueue({});
    expect((await liveJobIds(queue, [], ['failed'])).size).toBe(0);
  });
});
