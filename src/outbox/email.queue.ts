import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger } from '@nestjs/common';
import type { AdvancedSettings, Job, JobOptions, Queue } from 'bull';
import { allFulfilled, MicroBatch } from '../common/micro-batch';
import { AppConfigService } from '../config/app-config.service';
import { liveJobIds } from '../queue/live-jobs';
import { JobName, QueueName } from '../queue/queue.constants';
import { withRedisTimeout } from '../redis/redis-timeout';
import type { MessagePriority } from './message.entity';
import { requeueDelay, RetrySchedule } from './retry-schedule';

export interface DeliverEmailJob {
  messageId: string;
}

export interface EnqueueRequest {
  messageId: string;
  priority: MessagePriority;
  /** Not before this time (scheduled messages). */
  notBefore?: Date | null;
  /** Attempts already made (a deferred message whose job was lost keeps its place in the schedule). */
  attemptsMade?: number;
  /** A deferred message whose job was lost: when its next attempt is due (its job waits until then). */
  nextAttemptAt?: Date | null;
}

/** What a job's backoff knows of the attempts made before the job was added (Bull hands it to the strategy). */
interface RetryOptions {
  attemptsBefore: number;
}

/** Bull priorities: 1 is taken first. Every job carries one, so `normal` does not jump ahead of `low`. */
const BULL_PRIORITY: Record<MessagePriority, number> = { high: 1, normal: 2, low: 3 };
const RETRY_STRATEGY = 'mailroom-email-retry';
/** A request waits at most this long for Redis after its message committed; the sweeper covers the rest. */
const ENQUEUE_TIMEOUT_MS = 2000;

/** Adds of concurrent requests share one addBulk. */
const MAX_BULK = 500;
const MAX_CONCURRENT_BULKS = 4;

/**
 * The producer side of the `email` queue. Job id = message id, so adding twice is harmless. Adds from
 * concurrent requests go to Redis together (addBulk: one round trip).
 */
@Injectable()
export class EmailQueue {
  private readonly logger = new Logger(EmailQueue.name);
  readonly retrySchedule: RetrySchedule;
  private readonly adds = new MicroBatch<EnqueueRequest, boolean>((requests) => this.addBulk(requests), MAX_BULK, MAX_CONCURRENT_BULKS);

  constructor(
    @InjectQueue(QueueName.Email) readonly queue: Queue<DeliverEmailJob>,
    config: AppConfigService,
  ) {
    this.retrySchedule = new RetrySchedule(config.env.EMAIL_RETRY_FIRST_DELAY_MS);
    // Bull reads custom backoff strategies from the queue's settings when a job fails; the queue is
    // registered for every feature in QueueModule, so the email strategy is attached here.
    const settings = (queue as unknown as { settings: AdvancedSettings }).settings;
    settings.backoffStrategies = {
      ...settings.backoffStrategies,
      // A job added for a message that had made attempts before (the sweeper's) goes on with the schedule from there.
      [RETRY_STRATEGY]: (attemptsMade: number, _err: unknown, options: RetryOptions | null) =>
        this.retrySchedule.delayAfter((options?.attemptsBefore ?? 0) + attemptsMade),
    };
  }

  /** Adds the job; resolves false (never rejects) when Redis did not take it in time. */
  enqueue(request: EnqueueRequest): Promise<boolean> {
    return this.adds.submit(request);
  }

  private async addBulk(requests: EnqueueRequest[]): Promise<PromiseSettledResult<boolean>[]> {
    const jobs = requests.map((request) => ({
      name: JobName.DeliverEmail,
      data: { messageId: request.messageId },
      opts: this.jobOptions(request),
    }));
    try {
      await withRedisTimeout(this.queue.addBulk(jobs), ENQUEUE_TIMEOUT_MS);
      return allFulfilled(requests.map(() => true));
    } catch (err) {
      this.logger.warn(`Could not queue ${requests.length} email(s), the sweeper will: ${(err as Error).message}`);
      return allFulfilled(requests.map(() => false));
    }
  }

  /** Queues again the jobs of committed messages that have none (the sweeper); rejects when Redis refuses them. */
  async requeue(requests: EnqueueRequest[]): Promise<void> {
    await this.queue.addBulk(
      requests.map((request) => ({ name: JobName.DeliverEmail, data: { messageId: request.messageId }, opts: this.jobOptions(request) })),
    );
  }

  private jobOptions(request: EnqueueRequest): JobOptions {
    const delay = requeueDelay(request, Date.now());
    const attemptsBefore = request.attemptsMade ?? 0;
    const options: RetryOptions = { attemptsBefore };
    return {
      jobId: request.messageId,
      priority: BULL_PRIORITY[request.priority],
      ...(delay > 0 ? { delay } : {}),
      attempts: Math.max(1, this.retrySchedule.maxAttempts - attemptsBefore),
      backoff: attemptsBefore > 0 ? { type: RETRY_STRATEGY, options } : { type: RETRY_STRATEGY },
    };
  }

  /**
   * Of these message ids, those with a live job in Redis (waiting, delayed, active, or kept after
   * completing). A job that failed for good (its attempts used up by unexpected errors) is removed, so
   * that the message can be queued again.
   */
  withLiveJobs(messageIds: string[]): Promise<Set<string>> {
    return liveJobIds(this.queue, messageIds, ['failed']);
  }

  /**
   * The message's attempt that this run of its job makes, counted over all its jobs (1 for the first): a job the
   * sweeper added for a deferred message goes on from the attempts the message had made.
   */
  static attemptOf(job: Job<DeliverEmailJob>): number {
    const backoff = job.opts.backoff;
    const options = typeof backoff === 'object' ? (backoff.options as Partial<RetryOptions> | undefined) : undefined;
    return (options?.attemptsBefore ?? 0) + job.attemptsMade + 1;
  }

  /** Removes a waiting or delayed job (cancelled message); an active one finds the message cancelled. */
  async remove(messageId: string): Promise<void> {
    const job = await this.queue.getJob(messageId);
    await job?.remove().catch(() => undefined);
  }
}
