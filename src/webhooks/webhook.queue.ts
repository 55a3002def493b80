import { InjectQueue } from '@nestjs/bull';
import { Injectable } from '@nestjs/common';
import type { JobOptions, Queue } from 'bull';
import { AppConfigService } from '../config/app-config.service';
import { JobName, QueueName } from '../queue/queue.constants';
import { WebhookRetrySchedule } from './webhook-retry-schedule';

export interface DeliverWebhookJob {
  deliveryId: string;
  /** Which attempt of the delivery this job makes (1, 2, …, counting on across replays). */
  attempt: number;
}

export interface AttemptRequest extends DeliverWebhookJob {
  /** Wait this long first (a retry). */
  delayMs?: number;
}

/**
 * The producer side of the `webhooks` queue: one job per attempt, id `<deliveryId>:<attempt>` (adding one twice
 * is harmless), without Bull retries: the delivery service schedules the next attempt itself.
 */
@Injectable()
export class WebhookQueue {
  readonly retrySchedule: WebhookRetrySchedule;

  constructor(
    @InjectQueue(QueueName.Webhooks) readonly queue: Queue<DeliverWebhookJob>,
    config: AppConfigService,
  ) {
    this.retrySchedule = WebhookRetrySchedule.parse(config.env.WEBHOOK_RETRY_SCHEDULE);
  }

  async add(requests: AttemptRequest[]): Promise<void> {
    if (requests.length === 0) return;
    await this.queue.addBulk(
      requests.map((request) => ({
        name: JobName.DeliverWebhook,
        data: { deliveryId: request.deliveryId, attempt: request.attempt },
        opts: jobOptions(request),
      })),
    );
  }

  /**
   * Of these attempts, those with a live job in Redis (waiting, delayed, active, or kept after completing). A
   * job that failed (an unexpected error: its attempt was not recorded) is removed, so that it can be added again.
   */
  async withLiveJobs(attempts: DeliverWebhookJob[]): Promise<Set<string>> {
    if (attempts.length === 0) return new Set();
    const ids = attempts.map(jobId);
    const pipeline = this.queue.client.pipeline();
    for (const id of ids) pipeline.exists(this.queue.toKey(id)).zscore(this.queue.toKey('failed'), id);
    const results = (await pipeline.exec()) ?? [];
    const live = new Set<string>();
    for (const [i, id] of ids.entries()) {
      const exists = results[2 * i]?.[1] === 1;
      const failed = results[2 * i + 1]?.[1] !== null;
      if (exists && !failed) live.add(id);
      else if (exists) await (await this.queue.getJob(id))?.remove().catch(() => undefined);
    }
    return live;
  }
}

export function jobId(attempt: DeliverWebhookJob): string {
  return `${attempt.deliveryId}:${attempt.attempt}`;
}

function jobOptions(request: AttemptRequest): JobOptions {
  return { jobId: jobId(request), attempts: 1, ...(request.delayMs ? { delay: request.delayMs } : {}) };
}
