import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bull';
import { AppConfigService } from '../../config/app-config.service';
import { JobName, QueueName } from '../../queue/queue.constants';
import { withRedisTimeout } from '../../redis/redis-timeout';
import { jobAttemptsLeft } from './list-send-attempts';

export interface FanOutListSendJob {
  listSendId: string;
}

/** A request waits at most this long for Redis after its list send committed; the sweeper covers the rest. */
const ADD_TIMEOUT_MS = 2000;

/**
 * The producer side of the `list-sends` queue. Job id = list send id, so adding twice is one job. A job has the
 * attempts its send has left of LIST_SEND_MAX_ATTEMPTS (the send counts its runs), retried after
 * LIST_SEND_RETRY_FIRST_DELAY_MS, doubling; a job that failed for good stays in the failed set with its reason
 * (the queue keeps the last 5,000: QueueModule's removeOnFail).
 */
@Injectable()
export class ListSendQueue {
  private readonly logger = new Logger(ListSendQueue.name);

  constructor(
    @InjectQueue(QueueName.ListSends) readonly queue: Queue<FanOutListSendJob>,
    private readonly config: AppConfigService,
  ) {}

  /** Adds the job of a send that has made `attemptsMade` runs; resolves false (never rejects) when Redis did not take it in time. */
  async add(listSendId: string, attemptsMade = 0): Promise<boolean> {
    const { LIST_SEND_MAX_ATTEMPTS, LIST_SEND_RETRY_FIRST_DELAY_MS } = this.config.env;
    try {
      await withRedisTimeout(
        this.queue.add(
          JobName.FanOutListSend,
          { listSendId },
          {
            jobId: listSendId,
            attempts: jobAttemptsLeft(LIST_SEND_MAX_ATTEMPTS, attemptsMade),
            backoff: { type: 'exponential', delay: LIST_SEND_RETRY_FIRST_DELAY_MS },
          },
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
   * Adds again the job of an unfinished send, unless Redis holds a live one (waiting, delayed or active): `live`. A
   * failed or completed job (Redis lost the live one, or its attempts ran out before the send's) is replaced by one
   * with the attempts the send has left: `added`, or `not-added` when Redis did not take it in time. A send with no
   * attempts left of LIST_SEND_MAX_ATTEMPTS gets none (a job would only fail it): `spent`.
   */
  async requeue(listSendId: string, attemptsMade: number): Promise<'live' | 'added' | 'not-added' | 'spent'> {
    const job = await this.queue.getJob(listSendId);
    if (job) {
      const state = await job.getState();
      if (state !== 'failed' && state !== 'completed') return 'live';
    }
    if (attemptsMade >= this.config.env.LIST_SEND_MAX_ATTEMPTS) return 'spent';
    await job?.remove();
    return (await this.add(listSendId, attemptsMade)) ? 'added' : 'not-added';
  }
}
