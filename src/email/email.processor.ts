import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { AppConfigService } from '../config/app-config.service';
import { JobName, QueueName } from '../queue/queue.constants';
import { DeliveryService, NotYetDue } from './delivery.service';
import { type DeliverEmailJob, EmailQueue } from '../outbox/email.queue';
import { MAIL_TRANSPORT, MailTransport } from './transport/mail-transport';

/**
 * The `email` queue's worker (APP_ROLE worker or all). Registered at start rather than with @Process, so
 * that its concurrency comes from EMAIL_WORKER_CONCURRENCY.
 */
@Injectable()
export class EmailProcessor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(EmailProcessor.name);

  constructor(
    @InjectQueue(QueueName.Email) private readonly queue: Queue<DeliverEmailJob>,
    private readonly delivery: DeliveryService,
    private readonly config: AppConfigService,
    @Inject(MAIL_TRANSPORT) private readonly transport: MailTransport,
  ) {}

  onApplicationBootstrap(): void {
    this.queue
      .process(JobName.DeliverEmail, this.config.env.EMAIL_WORKER_CONCURRENCY, (job: Job<DeliverEmailJob>) => this.handle(job))
      .catch((err: Error) => this.logger.error(`The email worker stopped: ${err.message}`));
  }

  private async handle(job: Job<DeliverEmailJob>): Promise<void> {
    // The job's own attempts are what is left of the schedule: a job the sweeper added after some has fewer.
    const isLastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    try {
      await this.delivery.deliver(job.data.messageId, { attempt: EmailQueue.attemptOf(job), isLastAttempt });
    } catch (err) {
      if (err instanceof NotYetDue) waitUntilDue(job, err.due);
      throw err;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.transport.close();
  }
}

/**
 * Bull moves a rejected job to its delayed set by the job's backoff, counting an attempt: it reads both from
 * the job it holds in memory, and stores the count plus one. A run before the message's time is no attempt, and
 * waits for exactly the time left, whatever backoff the job was added with (one added by hand may have none,
 * and would be retried at once, again and again).
 */
function waitUntilDue(job: Job<DeliverEmailJob>, due: Date): void {
  job.attemptsMade -= 1;
  // At least 1 ms: Bull retries a job whose backoff is 0 at once, without the delayed set.
  job.opts.backoff = { type: 'fixed', delay: Math.max(1, due.getTime() - Date.now()) };
}
