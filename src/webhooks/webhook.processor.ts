import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { AppConfigService } from '../config/app-config.service';
import { JobName, QueueName } from '../queue/queue.constants';
import { WebhookDeliveryService } from './webhook-delivery.service';
import type { DeliverWebhookJob } from './webhook.queue';

/**
 * The `webhooks` queue's worker (APP_ROLE worker or all), registered at start so that its concurrency comes from
 * WEBHOOK_WORKER_CONCURRENCY. One job is one attempt.
 */
@Injectable()
export class WebhookProcessor implements OnApplicationBootstrap {
  private readonly logger = new Logger(WebhookProcessor.name);

  constructor(
    @InjectQueue(QueueName.Webhooks) private readonly queue: Queue<DeliverWebhookJob>,
    private readonly delivery: WebhookDeliveryService,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    this.queue
      .process(JobName.DeliverWebhook, this.config.env.WEBHOOK_WORKER_CONCURRENCY, (job: Job<DeliverWebhookJob>) =>
        this.delivery.attempt(job.data.deliveryId, job.data.attempt),
      )
      .catch((err: Error) => this.logger.error(`The webhook worker stopped: ${err.message}`));
  }
}
