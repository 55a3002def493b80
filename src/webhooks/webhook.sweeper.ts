import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RedisService } from '../redis/redis.service';
import { jobId, WebhookQueue } from './webhook.queue';

const SWEEP_INTERVAL_MS = 30_000;
/** A pending delivery this far past its next attempt without a job lost it (Redis down or emptied). */
const OVERDUE_AFTER_MS = 30_000;
const PAGE = 500;

/**
 * Deliveries are committed before their jobs are added, and a job can be lost with Redis: every 30 s one
 * instance (Redis lock) re-adds the job of each pending delivery that is overdue and has none (the email
 * sweeper's idea, D-16).
 */
@Injectable()
export class WebhookSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WebhookSweeper.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly webhookQueue: WebhookQueue,
    private readonly redis: RedisService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweep()
        .catch((err: Error) => {
          this.logger.warn(`Webhook sweep failed: ${err.message}`);
          return 0;
        })
        .finally(() => (this.running = undefined));
    }, SWEEP_INTERVAL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Re-adds the missing jobs of overdue pending deliveries; returns how many. */
  async sweep(overdueBefore = new Date(Date.now() - OVERDUE_AFTER_MS)): Promise<number> {
    const requeued = await this.redis.withLock(this.redis.key('webhooks', 'sweeper-lock'), SWEEP_INTERVAL_MS, async () => {
      let requeued = 0;
      let afterId = '';
      for (;;) {
        const page: { id: string; attempts: number }[] = await this.dataSource.query(
          `SELECT id, attempts FROM webhook_deliveries
           WHERE status = 'pending' AND next_attempt_at < $1 AND id > $2 ORDER BY id LIMIT $3`,
          [overdueBefore, afterId, PAGE],
        );
        if (page.length === 0) break;
        afterId = page[page.length - 1].id;
        const next = page.map((d) => ({ deliveryId: d.id, attempt: d.attempts + 1 }));
        const live = await this.webhookQueue.withLiveJobs(next);
        const lost = next.filter((attempt) => !live.has(jobId(attempt)));
        await this.webhookQueue.add(lost);
        requeued += lost.length;
        if (page.length < PAGE) break;
      }
      return requeued;
    });
    if (requeued) this.logger.log(`Re-queued ${requeued} webhook deliveries that had no queue job`);
    return requeued ?? 0;
  }
}
