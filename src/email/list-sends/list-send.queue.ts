import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bull';
import { JobName, QueueName } from '../../queue/queue.constants';
import { withRedisTimeout } from '../../redis/redis-timeout';

export interface FanOutListSendJob {
  listSendId: string;
}

/** A request waits at most this long for Redis after its list send committed; the sweeper covers the rest. */
const ADD_TIMEOUT_MS = 2000;

/** The producer side of the `list-sends` queue. Job id = list send id, so adding twice is one job. */
@Injectable()
export class ListSendQueue {
  private readonly logger = new Logger(ListSendQueue.name);

  constructor(@InjectQueue(QueueName.ListSends) readonly queue: Queue<FanOutListSendJob>) {}

  /** Adds the job; resolves false (never rejects) when Redis did not take it in time. */
  async add(listSendId: string): Promise<boolean> {
    try {
      await withRedisTimeout(
        this.queue.add(
          JobName.FanOutListSend,
          { listSendId },
          { jobId: listSendId, attempts: 10, backoff: { type: 'exponential', delay: 1000 } },
        ),
        ADD_TIMEOUT_MS,
      );
      return true;
    } catch (err) {
      this.logger.warn(`Could not queue list send ${listSendId}, the sweeper will: ${(err as Error).message}`);
      return false;
    }
  }

  /**
   * Adds the job of an unfinished list send that has no live one: Redis lost it, or its attempts ran out. A
   * waiting, delayed or active job is left alone. True when a job was added.
   */
  async ensureJob(listSendId: string): Promise<boolean> {
    const job = await this.queue.getJob(listSendId);
    if (job) {
      const state = await job.getState();
      if (state !== 'failed' && state !== 'completed') return false;
      await job.remove();
    }
    return this.add(listSendId);
  }
}
