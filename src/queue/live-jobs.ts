import type { Queue } from 'bull';

/** The sets of a Bull queue that hold finished jobs. */
export type FinishedState = 'failed' | 'completed';

/**
 * Of these job ids, those with a live job in Redis: its hash exists and it is in none of the `finished` sets. A
 * job that exists but is in one of them is removed, so that it can be added again. One pipeline for the checks.
 */
export async function liveJobIds(queue: Queue, jobIds: string[], finished: FinishedState[]): Promise<Set<string>> {
  if (jobIds.length === 0) return new Set();
  const pipeline = queue.client.pipeline();
  for (const id of jobIds) {
    pipeline.exists(queue.toKey(id));
    for (const state of finished) pipeline.zscore(queue.toKey(state), id);
  }
  const results = (await pipeline.exec()) ?? [];
  const perJob = 1 + finished.length;
  const live = new Set<string>();
  for (const [i, id] of jobIds.entries()) {
    const exists = results[perJob * i]?.[1] === 1;
    const isFinished = finished.some((_, k) => results[perJob * i + 1 + k]?.[1] !== null);
    if (exists && !isFinished) live.add(id);
    else if (exists) await (await queue.getJob(id))?.remove().catch(() => undefined);
  }
  return live;
}
