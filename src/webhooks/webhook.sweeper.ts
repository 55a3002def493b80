import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RedisService } from '../redis/redis.service';
import { WebhookEndpointGate } from './webhook-endpoint-gate';
import { jobId, WebhookQueue } from './webhook.queue';

const SWEEP_INTERVAL_MS = 30_000;
/** A pending delivery this far past its next attempt without a job lost it (Redis down or emptied). */
const OVERDUE_AFTER_MS = 30_000;
const PAGE = 500;

/**
 * Deliveries are committed before their jobs are added, and a job can be lost with Redis: every 30 s one
 * instance (Redis lock) re-adds the job of each pending delivery that is overdue and has none, nor a place in its
 * endpoint's queue, nor a slot there (the email sweeper's idea, D-16). It also wakes every endpoint whose queue
 * holds attempts, in case the worker that would have handed its slot on died.
 */
@Injectable()
export class WebhookSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WebhookSweeper.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly webhookQueue: WebhookQueue,
    private readonly redis: RedisService,
    private readonly gate: WebhookEndpointGate,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweep()
        .catch((err: Error) => this.logger.warn(`Webhook sweep failed: ${err.message}`))
        .finally(() => (this.running = undefined));
    }, SWEEP_INTERVAL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Re-adds the missing jobs of overdue pending deliveries; returns how many (null: another instance sweeps). */
  async sweep(overdueBefore = new Date(Date.now() - OVERDUE_AFTER_MS)): Promise<number | null> {
    const requeued = await this.redis.withLock(this.redis.key('webhooks', 'sweeper-lock'), SWEEP_INTERVAL_MS, async () => {
      let requeued = 0;
      let afterId = '';
      for (;;) {
        const page: { id: string; attempts: number; webhook_id: string }[] = await this.dataSource.query(
          `SELECT id, attempts, webhook_id FROM webhook_deliveries
           WHERE status = 'pending' AND next_attempt_at < $1 AND id > $2 ORDER BY id LIMIT $3`,
          [overdueBefore, afterId, PAGE],
        );
        if (page.length === 0) break;
        afterId = page[page.length - 1].id;
        const next = page.map((d) => ({ deliveryId: d.id, attempt: d.attempts + 1, webhookId: d.webhook_id }));
        const held = await this.gate.held(next);
        const unheld = next.filter((attempt) => !held.has(jobId(attempt)));
        const live = await this.webhookQueue.withLiveJobs(unheld);
        const lost = unheld.filter((attempt) => !live.has(jobId(attempt)));
        await this.webhookQueue.add(lost);
        requeued += lost.length;
        if (page.length < PAGE) break;
      }
      for await (const endpoints of this.gate.queuedEndpoints()) {
        await this.webhookQueue.wake(endpoints, { fanOut: true, id: 'sweep' });
      }
      return requeued;
    });
    if (requeued) this.logger.log(`Re-queued ${requeued} webhook deliveries that had no queue job`);
    return requeued;
  }
}
