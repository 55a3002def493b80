import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfigService } from '../../config/app-config.service';
import { ListSendQueue } from './list-send.queue';
import { ListSendsService } from './list-sends.service';

const PAGE = 100;

/**
 * D-16 for list sends: the row commits before its job is added, so a Redis outage in between (or a job whose
 * attempts ran out) leaves an unfinished list send without a job. Every EMAIL_SWEEP_INTERVAL_MS each worker
 * re-adds the job of those untouched for EMAIL_SWEEP_AFTER_MS (a running fan-out touches its row every page);
 * job id = list send id, so workers sweeping together still add one job.
 */
@Injectable()
export class ListSendSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ListSendSweeper.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly listSends: ListSendsService,
    private readonly queue: ListSendQueue,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep()
        .catch((err: Error) => this.logger.warn(`List-send sweep failed: ${err.message}`))
        .finally(() => (this.running = undefined));
    }, this.config.env.EMAIL_SWEEP_INTERVAL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async sweep(): Promise<void> {
    const stalled = await this.listSends.stalled(new Date(Date.now() - this.config.env.EMAIL_SWEEP_AFTER_MS), PAGE);
    for (const id of stalled) {
      if (await this.queue.ensureJob(id)) this.logger.log(`Re-queued list send ${id}, which had no live job`);
    }
  }
}
