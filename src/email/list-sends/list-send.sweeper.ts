import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfigService } from '../../config/app-config.service';
import { gaveUpReason } from './list-send-attempts';
import { ListSendQueue } from './list-send.queue';
import { ListSendsService } from './list-sends.service';

const PAGE = 100;

/**
 * D-16 for list sends: the row commits before its job is added, so a Redis outage in between (or a job whose
 * attempts ran out before the send's) leaves an unfinished list send without a job. Every EMAIL_SWEEP_INTERVAL_MS
 * each worker re-adds the job of those untouched for EMAIL_SWEEP_AFTER_MS (a running fan-out touches its row every
 * page) with the attempts the send has left of LIST_SEND_MAX_ATTEMPTS; one that has none left is failed instead. A
 * failed send is finished, and never re-added. Job id = list send id, so workers sweeping together add one job.
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
    for (const send of stalled) {
      const requeued = await this.queue.requeue(send.id, send.attempts);
      if (requeued === 'added') this.logger.log(`Re-queued list send ${send.id}, which had no live job (${send.attempts} attempt(s) made)`);
      if (requeued !== 'spent') continue;
      // One send that cannot be ended now must not hold up the others: the next sweep tries again.
      try {
        // False: another run ended it meanwhile.
        if (await this.listSends.fail(send.id, gaveUpReason(send.attempts, send.lastError))) {
          this.logger.error(`List send ${send.id} used up its ${send.attempts} attempts without ending: failed`);
        }
      } catch (err) {
        this.logger.warn(`Could not fail list send ${send.id}: ${(err as Error).message}`);
      }
    }
  }
}
