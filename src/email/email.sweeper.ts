import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { ForwardFailureReports } from './forward-failure-reports';
import { recordExpiredPending } from './forward-failures';
import { EmailQueue } from '../outbox/email.queue';
import { DeliveryStore } from './delivery.store';
import { MessagesRepository } from './messages.repository';
import { AWAITING_DELIVERY } from '../outbox/message.entity';

const PAGE = 500;

/**
 * D-16: a message is committed before its job is added, so a Redis outage in between (or a lost Redis)
 * leaves accepted messages without a job. Every EMAIL_SWEEP_INTERVAL_MS one instance (Redis lock) walks
 * the messages still awaiting delivery and re-adds the job of each one that has none, with the attempts it
 * has left, delayed until its next attempt was due (a deferred message keeps its place in the D-20 schedule, its
 * attempts counted on from those it made). One whose attempts are used up (its last attempt could not even be written) is failed instead:
 * re-adding it would start its retries again. The same sweep makes the delivery status notifications that
 * failures of forwarded mail still owe their senders (ForwardFailureReports.sweep).
 */
@Injectable()
export class EmailSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(EmailSweeper.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;
  /** A sweep of everything up to this time asked for while another ran: it runs when that one ends. */
  private sweepAfterwards?: Date;
  private closing = false;

  constructor(
    private readonly messages: MessagesRepository,
    private readonly store: DeliveryStore,
    private readonly emailQueue: EmailQueue,
    private readonly failureReports: ForwardFailureReports,
    private readonly redis: RedisService,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.runSweep(), this.config.env.EMAIL_SWEEP_INTERVAL_MS);
    // What was accepted while Redis was away has no job: when it comes back, sweep at once and take every
    // message without a live job, not only those older than EMAIL_SWEEP_AFTER_MS (a job added twice is one job).
    let connectedBefore = this.redis.client.status === 'ready';
    this.redis.client.on('ready', () => {
      if (connectedBefore) this.runSweep(new Date());
      connectedBefore = true;
    });
  }

  private runSweep(olderThan?: Date): void {
    if (this.closing) return;
    if (this.running) {
      // A periodic sweep under way (perhaps begun while Redis was away) only takes messages older than
      // EMAIL_SWEEP_AFTER_MS: the sweep of everything asked for now must still run after it.
      if (olderThan) this.sweepAfterwards = olderThan;
      return;
    }
    this.running = this.sweep(olderThan)
      .catch((err: Error) => {
        this.logger.warn(`Sweep failed: ${err.message}`);
        return 0;
      })
      .finally(() => {
        this.running = undefined;
        const next = this.sweepAfterwards;
        this.sweepAfterwards = undefined;
        if (next) this.runSweep(next);
      });
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    this.closing = true;
    await this.running;
  }

  /** Re-adds missing jobs of messages untouched since `olderThan`; returns how many. */
  async sweep(olderThan = new Date(Date.now() - this.config.env.EMAIL_SWEEP_AFTER_MS)): Promise<number> {
    const requeued = await this.redis.withLock(
      this.redis.key('email', 'sweeper-lock'),
      this.config.env.EMAIL_SWEEP_INTERVAL_MS,
      async () => {
        let afterId = '';
        let requeued = 0;
        for (;;) {
          const page = await this.messages.awaitingDelivery(olderThan, afterId, PAGE);
          if (page.length === 0) break;
          afterId = page[page.length - 1].id;
          const withJobs = await this.emailQueue.withLiveJobs(page.map((m) => m.id));
          const maxAttempts = this.emailQueue.retrySchedule.maxAttempts;
          const lost = page.filter((m) => !withJobs.has(m.id) && m.attempts < maxAttempts);
          for (const m of page.filter((m) => !withJobs.has(m.id) && m.attempts >= maxAttempts)) {
            const failed = await this.store.transition(
              m.id,
              AWAITING_DELIVERY,
              { status: 'failed', nextAttemptAt: null },
              [{ type: 'failed', detail: `gave up after ${m.attempts} attempts` }],
              {},
              recordExpiredPending(m.id),
            );
            if (failed) this.logger.warn(`${m.id} had used up its ${m.attempts} attempts without a final state: failed`);
            if (failed) await this.failureReports.report(m.id);
          }
          if (lost.length) {
            await this.emailQueue.requeue(
              lost.map((m) => ({
                messageId: m.id,
                priority: m.priority,
                notBefore: m.scheduledFor,
                attemptsMade: m.attempts,
                nextAttemptAt: m.nextAttemptAt,
              })),
            );
            requeued += lost.length;
          }
          if (page.length < PAGE) break;
        }
        // Notifications a dead process owed the senders of forwarded mail (their failures are recorded with the moves).
        await this.failureReports.sweep(olderThan);
        return requeued;
      },
    );
    if (requeued) this.logger.log(`Re-queued ${requeued} accepted email(s) that had no queue job`);
    return requeued ?? 0;
  }
}
