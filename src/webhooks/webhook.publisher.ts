import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { newId } from '../common/ids';
import { AppConfigService } from '../config/app-config.service';
import { type OutboxEvent, planPublishing, type Subscriber } from './webhook-publish-plan';
import { WebhookQueue } from './webhook.queue';

const BATCH = 500;
/**
 * Bytes of event payloads one batch loads at most, and bytes of payloads it writes at most (deliveries' and full
 * bodies'); the first event always goes. Far below what one string (a statement's JSON parameter) can hold.
 */
const BATCH_BYTES = 32 * 1024 * 1024;

/**
 * Turns event_outbox rows into webhook deliveries (workers). Every WEBHOOK_POLL_INTERVAL_MS, in one transaction:
 * up to 500 unpublished events in id order (SKIP LOCKED: several workers share the work) and up to BATCH_BYTES of
 * them, the enabled webhooks of their accounts subscribed to them, one delivery per (event, webhook) under one event
 * id per event while their payloads fit BATCH_BYTES, and those events marked published; the first attempts are
 * queued after the commit. Full batches are followed at once.
 * An event whose body would pass WEBHOOK_MAX_PAYLOAD_BYTES is delivered thin; its full body is kept once, in
 * webhook_event_bodies, for `GET /email/webhooks/events/{id}`.
 */
@Injectable()
export class WebhookPublisher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WebhookPublisher.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly webhookQueue: WebhookQueue,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.drain()
        .catch((err: Error) => this.logger.warn(`Publishing webhook events failed: ${err.message}`))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.config.env.WEBHOOK_POLL_INTERVAL_MS);
  }

  private async drain(): Promise<void> {
    while (!this.stopped && (await this.publishBatch()).more);
  }

  /** Publishes one batch; answers how many events it took, and whether more may be waiting. */
  async publishBatch(): Promise<{ published: number; more: boolean }> {
    const maxPayloadBytes = this.config.env.WEBHOOK_MAX_PAYLOAD_BYTES;
    const publicUrl = this.config.publicUrl;
    const { published, more, deliveryIds } = await this.dataSource.transaction(async (manager) => {
      const events: (OutboxEvent & { candidates: string })[] = await manager.query(
        `WITH candidates AS (
           SELECT id, octet_length(payload::text) AS bytes FROM event_outbox
           WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
         )
         SELECT e.id, e.account_id, e.type, e.payload, c.candidates
         FROM (SELECT id, count(*) OVER () AS candidates, sum(bytes) OVER (ORDER BY id) - bytes AS before FROM candidates) c
         JOIN event_outbox e ON e.id = c.id
         WHERE c.before < $2 ORDER BY e.id`,
        [BATCH, BATCH_BYTES],
      );
      if (events.length === 0) return { published: 0, more: false, deliveryIds: [] };
      const subscribers: Subscriber[] = await manager.query(
        'SELECT id, account_id, events FROM webhooks WHERE enabled AND account_id = ANY($1)',
        [[...new Set(events.map((e) => e.account_id))]],
      );
      const plan = planPublishing(events, subscribers, {
        maxPayloadBytes,
        budgetBytes: BATCH_BYTES,
        fullEventUrl: (eventId) => `${publicUrl}/email/webhooks/events/${eventId}`,
        newEventId: () => newId('evt'),
        newDeliveryId: () => newId('whd'),
      });
      if (plan.fullBodies.length > 0) {
        await manager.query(
          `INSERT INTO webhook_event_bodies (id, account_id, event_type, payload)
           SELECT b.id, b.account_id, b.event_type, b.payload
           FROM jsonb_to_recordset($1::jsonb) AS b(id varchar, account_id varchar, event_type varchar, payload jsonb)`,
          [JSON.stringify(plan.fullBodies)],
        );
      }
      if (plan.deliveries.length > 0) {
        await manager.query(
          `INSERT INTO webhook_deliveries (id, account_id, webhook_id, event_id, event_type, payload, status, next_attempt_at)
           SELECT d.id, d.account_id, d.webhook_id, d.event_id, d.event_type, d.payload, 'pending', now()
           FROM jsonb_to_recordset($1::jsonb) AS d(id varchar, account_id varchar, webhook_id varchar, event_id varchar, event_type varchar, payload jsonb)`,
          [JSON.stringify(plan.deliveries)],
        );
      }
      await manager.query('UPDATE event_outbox SET published_at = now() WHERE id = ANY($1::bigint[])', [plan.taken.map((e) => e.id)]);
      // Fewer events than the batch's count: the loaded bytes or the written ones were its bound, and more may wait.
      const full = events.length === BATCH || events.length < Number(events[0].candidates) || plan.cut;
      return { published: plan.taken.length, more: full, deliveryIds: plan.deliveries.map((d) => d.id) };
    });
    try {
      await this.webhookQueue.add(deliveryIds.map((deliveryId) => ({ deliveryId, attempt: 1 })));
    } catch (err) {
      this.logger.warn(`Could not queue ${deliveryIds.length} webhook deliveries, the sweeper will: ${(err as Error).message}`);
    }
    return { published, more };
  }
}
