import { InjectQueue } from '@nestjs/bull';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { AppConfigService } from '../config/app-config.service';
import { JobName, QueueName } from '../queue/queue.constants';
import { type AttemptOutcome, WebhookDeliveryService } from './webhook-delivery.service';
import { type EndpointVerdict, type Grant, WebhookEndpointGate } from './webhook-endpoint-gate';
import type { EndpointLimits } from './webhook-endpoint-limits';
import { WebhookEndpoints } from './webhook-endpoints';
import { OVERLOADED_STATUSES } from './webhook-retry-schedule';
import { type DeliverWebhookJob, WebhookQueue, type WakeWebhookEndpointJob } from './webhook.queue';

/** Attempts one job makes in a row on its endpoint's slot, and how long it keeps the slot, before handing it on. */
export const FOLLOW_MAX_ATTEMPTS = 20;
export const FOLLOW_MAX_MS = 1000;

/**
 * The `webhooks` queue's worker (APP_ROLE worker or all), registered at start so that its concurrency comes from
 * WEBHOOK_WORKER_CONCURRENCY. An attempt's job puts the attempt in its endpoint's own queue (WebhookEndpointGate)
 * and, when the endpoint has a free slot, makes the attempt at that queue's head; then the next ones, handing
 * the slot on, while the endpoint has them and its limits allow, for at most FOLLOW_MAX_ATTEMPTS attempts or
 * FOLLOW_MAX_MS. Then it gives the slot back and wakes the endpoint's queue with a job at the back of the Bull
 * queue, so that the jobs of other endpoints waiting there get workers first. An attempt that finds no slot is left
 * in its endpoint's queue and its job ends: a slow or dead endpoint holds at most its own slots' worth of workers
 * (one while its last attempt failed), and every other endpoint's attempts go on. A wake job (after a pause or
 * the rate limit, or from the sweeper) takes from an endpoint's queue the same way.
 */
@Injectable()
export class WebhookProcessor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WebhookProcessor.name);
  private stopping = false;

  constructor(
    @InjectQueue(QueueName.Webhooks) private readonly queue: Queue<DeliverWebhookJob | WakeWebhookEndpointJob>,
    private readonly delivery: WebhookDeliveryService,
    private readonly endpoints: WebhookEndpoints,
    private readonly gate: WebhookEndpointGate,
    private readonly webhookQueue: WebhookQueue,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    // One processor for both job names: Bull adds up the concurrency of named processors.
    this.queue
      .process('*', this.config.env.WEBHOOK_WORKER_CONCURRENCY, (job: Job<DeliverWebhookJob | WakeWebhookEndpointJob>) => this.handle(job))
      .catch((err: Error) => this.logger.error(`The webhook worker stopped: ${err.message}`));
  }

  /** Attempts end with the one in progress: the slot goes back, and the endpoint's queue waits for another worker. */
  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  /** One job of the `webhooks` queue; answers what it did (Bull Board shows it). */
  handle(job: Pick<Job<DeliverWebhookJob | WakeWebhookEndpointJob>, 'name' | 'data'>): Promise<string> {
    return job.name === (JobName.WakeWebhookEndpoint as string)
      ? this.wake(job.data as WakeWebhookEndpointJob)
      : this.deliver(job.data as DeliverWebhookJob);
  }

  private async deliver(job: DeliverWebhookJob): Promise<string> {
    const target = await this.endpoints.ofAttempt(job);
    if (!target) return 'nothing to do';
    const grant = await this.gate.acquire(target.webhookId, target.limits, { queued: job, take: !this.stopping });
    return this.follow(target.webhookId, target.limits, grant, true);
  }

  private async wake(job: WakeWebhookEndpointJob): Promise<string> {
    const limits = await this.endpoints.limitsOf(job.webhookId);
    if (!limits) {
      await this.gate.forget(job.webhookId);
      return 'the webhook is gone';
    }
    const grant = await this.gate.acquire(job.webhookId, limits, { take: !this.stopping });
    return this.follow(job.webhookId, limits, grant, job.fanOut);
  }

  /**
   * Makes the granted attempt and the next ones of the endpoint's queue, one after the other, on the same slot, until
   * the queue is empty, the endpoint has no room, or this job had its turn. Whatever fails, the slot is given back.
   */
  private async follow(webhookId: string, limits: EndpointLimits, first: Grant, fanOut: boolean): Promise<string> {
    const startedAt = Date.now();
    let grant = first;
    let made = 0;
    await this.scheduleWakes(webhookId, grant, fanOut);
    while (grant.run) {
      const run = grant.run;
      let released = false;
      try {
        const outcome = await this.delivery.attempt(run.deliveryId, run.attempt);
        made++;
        if (outcome) await this.pauseIfOverloaded(webhookId, outcome);
        // A failed read keeps the limits known: the slot must go back whatever happens.
        const current = (await this.endpoints.limitsOf(webhookId).catch(() => limits)) ?? limits;
        const turnOver = made >= FOLLOW_MAX_ATTEMPTS || Date.now() - startedAt >= FOLLOW_MAX_MS;
        const take = !this.stopping && !turnOver;
        grant = await this.gate.acquire(webhookId, current, { released: run, verdict: verdictOf(outcome), take });
        released = true;
        // Giving the slot up (or getting them all back) leaves room that a wake at the back of the Bull queue takes.
        await this.scheduleWakes(webhookId, grant, !take || grant.opened);
      } finally {
        if (!released) await this.giveBack(webhookId, limits, run);
      }
    }
    return made === 0 ? 'waiting in the endpoint’s queue' : `made ${made} attempt${made === 1 ? '' : 's'}`;
  }

  /**
   * The slot of an attempt that ended in an unexpected error goes back, and others are woken for the queue (an attempt
   * that was not recorded is queued again by the sweeper; one that was does nothing when it runs again).
   */
  private async giveBack(webhookId: string, limits: EndpointLimits, run: DeliverWebhookJob): Promise<void> {
    try {
      const released = await this.gate.acquire(webhookId, limits, { released: run, take: false });
      await this.scheduleWakes(webhookId, released, true);
    } catch (err) {
      // The error that got here is the one to report: the lease lapses, and the sweeper wakes the queue.
      this.logger.warn(`Could not give back a slot of webhook ${webhookId}: ${(err as Error).message}`);
    }
  }

  /** An endpoint that says it is overloaded gets no other attempt for a while (its Retry-After, within bounds). */
  private async pauseIfOverloaded(webhookId: string, outcome: AttemptOutcome): Promise<void> {
    if (outcome.statusCode === null || !OVERLOADED_STATUSES.has(outcome.statusCode)) return;
    const ms = this.webhookQueue.retrySchedule.endpointPause(outcome.retryAfterMs ?? null);
    await this.gate.pause(webhookId, ms).catch((err: Error) => this.logger.warn(`Could not pause webhook ${webhookId}: ${err.message}`));
  }

  /** The wake a blocked queue needs when its pause or rate window ends, and more workers when it has room for them. */
  private async scheduleWakes(webhookId: string, grant: Grant, fanOut: boolean): Promise<void> {
    try {
      if (grant.waitMs > 0) await this.webhookQueue.wake([webhookId], { delayMs: grant.waitMs, fanOut: true });
      else if (fanOut && grant.spare > 0) await this.webhookQueue.wake([webhookId], { count: grant.spare, fanOut: false });
    } catch (err) {
      this.logger.warn(`Could not wake the queue of webhook ${webhookId}, the sweeper will: ${(err as Error).message}`);
    }
  }
}

/** What an attempt says about its endpoint: nothing when none was made or the failure was not the endpoint's. */
export function verdictOf(outcome: AttemptOutcome | null): EndpointVerdict {
  if (!outcome || outcome.blameless) return null;
  return outcome.succeeded ? 'ok' : 'failed';
}
