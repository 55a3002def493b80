import { InjectQueue } from '@nestjs/bull';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { AppConfigService } from '../../config/app-config.service';
import { JobName, QueueName } from '../../queue/queue.constants';
import { FanOutInterrupted, ListSendFailed } from './list-send-attempts';
import type { FanOutListSendJob } from './list-send.queue';
import { ListSendsService } from './list-sends.service';

/** List sends fanned out at once by one worker process; each holds a page of subscribers in memory. */
const CONCURRENCY = 2;

/**
 * The `list-sends` queue's worker (APP_ROLE worker or all). On shutdown a running fan-out stops after its
 * current page and rejects without using up an attempt, so that a retry (here after a restart, or on another worker) goes on. The
 * run that fails a send for good sends its job to the failed set, with the reason, whatever attempts Bull has left.
 */
@Injectable()
export class ListSendProcessor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ListSendProcessor.name);
  private stopping = false;

  constructor(
    @InjectQueue(QueueName.ListSends) private readonly queue: Queue<FanOutListSendJob>,
    private readonly listSends: ListSendsService,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    this.queue
      .process(JobName.FanOutListSend, CONCURRENCY, (job: Job<FanOutListSendJob>) => this.handle(job))
      .catch((err: Error) => this.logger.error(`The list-send worker stopped: ${err.message}`));
  }

  private async handle(job: Job<FanOutListSendJob>): Promise<void> {
    try {
      await this.listSends.run(job.data.listSendId, () => this.stopping);
    } catch (err) {
      // Bull 4 marks the job at once (its typings say a promise).
      if (err instanceof ListSendFailed) void job.discard();
      if (err instanceof FanOutInterrupted) notCounted(job, this.config.env.LIST_SEND_RETRY_FIRST_DELAY_MS);
      throw err;
    }
  }

  beforeApplicationShutdown(): void {
    this.stopping = true;
  }
}

/**
 * A run that shutdown interrupted uses up no attempt of its job, as the send gives back its count: Bull stores the
 * count plus one and reads the backoff from the job it holds in memory. The retry waits the first delay, not Bull's
 * exponential backoff after no run, which is none: a worker that takes jobs until its queue pauses would take it
 * again at once, over and over; another worker, or this one after its restart, goes on with it.
 */
function notCounted(job: Job<FanOutListSendJob>, retryDelayMs: number): void {
  job.attemptsMade -= 1;
  job.opts.backoff = { type: 'fixed', delay: Math.max(1, retryDelayMs) };
}
