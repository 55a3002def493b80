import { InjectQueue } from '@nestjs/bull';
import { Injectable } from '@nestjs/common';
import type { JobOptions, Queue } from 'bull';
import { AppConfigService } from '../config/app-config.service';
import { liveJobIds } from '../queue/live-jobs';
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

/** Take attempts from the endpoint's own queue, as far as its limits allow. */
export interface WakeWebhookEndpointJob {
  webhookId: string;
  /** Also wake more workers when the endpoint has room for more than one attempt. */
  fanOut: boolean;
}

/** Wakes at the same instant, from different workers, share one job: their times are rounded up to this. */
const WAKE_ROUNDING_MS = 100;

/**
 * The producer side of the `webhooks` queue: one job per attempt, id `<deliveryId>:<attempt>` (adding one twice
 * is harmless), without Bull retries: the delivery service schedules the next attempt itself. The jobs that wake
 * an endpoint's own queue (WebhookEndpointGate) go here too.
 */
@Injectable()
export class WebhookQueue {
  readonly retrySchedule: WebhookRetrySchedule;

  constructor(
    @InjectQueue(QueueName.Webhooks) readonly queue: Queue<DeliverWebhookJob | WakeWebhookEndpointJob>,
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
   * Makes this attempt due now (a replay): its job waiting for a retry's backoff is promoted; a job waiting or running
   * already is left as it is; without a live job, one is added. Each attempt has one job id and the endpoint's gate
   * never queues an attempt in flight, so the delivery still gets one request at a time.
   */
  async attemptNow(attempt: DeliverWebhookJob): Promise<void> {
    const id = jobId(attempt);
    const job = (await this.withLiveJobs([attempt])).has(id) ? await this.queue.getJob(id) : null;
    if (!job) return this.add([attempt]);
    if (!(await job.isDelayed())) return;
    // Moved on meanwhile (its delay ended, or another replay promoted it): it runs now all the same.
    await job.promote().catch(async (err: Error) => {
      if (await job.isDelayed()) throw err;
    });
  }

  /**
   * Wakes the endpoints' queues: now, `count` times each (fanning out to more workers), or once after `delayMs`
   * (one job for all the wakes of an endpoint due at the same time). `id` makes repeated calls share one job.
   */
  async wake(webhookIds: string[], options: { delayMs?: number; count?: number; fanOut: boolean; id?: string }): Promise<void> {
    if (webhookIds.length === 0) return;
    const dueAt = options.delayMs ? Math.ceil((Date.now() + options.delayMs) / WAKE_ROUNDING_MS) * WAKE_ROUNDING_MS : 0;
    const opts: JobOptions = { attempts: 1, removeOnComplete: true, removeOnFail: true };
    const jobs = webhookIds.flatMap((webhookId) => {
      const data: WakeWebhookEndpointJob = { webhookId, fanOut: options.fanOut };
      if (dueAt) return [{ data, opts: { ...opts, jobId: `wake:${webhookId}:${dueAt}`, delay: dueAt - Date.now() } }];
      if (options.id) return [{ data, opts: { ...opts, jobId: `wake:${webhookId}:${options.id}` } }];
      return Array.from({ length: options.count ?? 1 }, () => ({ data, opts }));
    });
    await this.queue.addBulk(jobs.map((job) => ({ name: JobName.WakeWebhookEndpoint, ...job })));
  }

  /**
   * Of these attempts, those with a live job in Redis (waiting, delayed or active). A job that failed (an
   * unexpected error: its attempt was not recorded) or completed (it may have left its attempt in its endpoint's
   * queue, and that was lost) is removed, so that it can be added again.
   */
  withLiveJobs(attempts: DeliverWebhookJob[]): Promise<Set<string>> {
    return liveJobIds(this.queue, attempts.map(jobId), ['failed', 'completed']);
  }
}

export function jobId(attempt: DeliverWebhookJob): string {
  return `${attempt.deliveryId}:${attempt.attempt}`;
}

function jobOptions(request: AttemptRequest): JobOptions {
  return { jobId: jobId(request), attempts: 1, ...(request.delayMs ? { delay: request.delayMs } : {}) };
}
