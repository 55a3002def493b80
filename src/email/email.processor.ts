import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { AppConfigService } from '../config/app-config.service';
import { JobName, QueueName } from '../queue/queue.constants';
import { DeliveryService } from './delivery.service';
import type { DeliverEmailJob } from './email.queue';
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

  private handle(job: Job<DeliverEmailJob>): Promise<void> {
    const attempt = job.attemptsMade + 1;
    return this.delivery.deliver(job.data.messageId, { attempt, isLastAttempt: attempt >= (job.opts.attempts ?? 1) });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.transport.close();
  }
}
