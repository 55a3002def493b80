import { InjectQueue } from '@nestjs/bull';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { JobName, QueueName } from '../../queue/queue.constants';
import type { FanOutListSendJob } from './list-send.queue';
import { ListSendsService } from './list-sends.service';

/** List sends fanned out at once by one worker process; each holds a page of subscribers in memory. */
const CONCURRENCY = 2;

/**
 * The `list-sends` queue's worker (APP_ROLE worker or all). On shutdown a running fan-out stops after its
 * current page and fails this attempt, so that a retry (here after a restart, or on another worker) goes on.
 */
@Injectable()
export class ListSendProcessor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ListSendProcessor.name);
  private stopping = false;

  constructor(
    @InjectQueue(QueueName.ListSends) private readonly queue: Queue<FanOutListSendJob>,
    private readonly listSends: ListSendsService,
  ) {}

  onApplicationBootstrap(): void {
    this.queue
      .process(JobName.FanOutListSend, CONCURRENCY, (job: Job<FanOutListSendJob>) =>
        this.listSends.fanOut(job.data.listSendId, () => this.stopping),
      )
      .catch((err: Error) => this.logger.error(`The list-send worker stopped: ${err.message}`));
  }

  beforeApplicationShutdown(): void {
    this.stopping = true;
  }
}
