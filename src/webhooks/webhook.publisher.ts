import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { newId } from '../common/ids';
import { AppConfigService } from '../config/app-config.service';
import { capPayload } from './webhook-thin-event';
import { WebhookQueue } from './webhook.queue';

const BATCH = 500;

interface OutboxRow {
  id: string;
  account_id: string;
  type: string;
  payload: Record<string, unknown>;
}

interface SubscriberRow {
  id: string;
  account_id: string;
  events: string[];
}

/**
 * Turns event_outbox rows into webhook deliveries (workers). Every WEBHOOK_POLL_INTERVAL_MS, in one transaction:
 * up to 500 unpublished events in id order (SKIP LOCKED: several workers share the work), the enabled webhooks of
 * their accounts subscribed to them, one delivery per (event, webhook) under one event id per event, and the
 * events marked published; the first attempts are queued after the commit. Full batches are followed at once.
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
    while (!this.stopped && (await this.publishBatch()) === BATCH);
  }

  /** Publishes one batch; returns how many events it took. */
  async publishBatch(): Promise<number> {
    const maxBytes = this.config.env.WEBHOOK_MAX_PAYLOAD_BYTES;
    const publicUrl = this.config.publicUrl;
    const { events, deliveryIds } = await this.dataSource.transaction(async (manager) => {
      const events: OutboxRow[] = await manager.query(
        'SELECT id, account_id, type, payload FROM event_outbox WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED',
        [BATCH],
      );
      if (events.length === 0) return { events, deliveryIds: [] };
      const subscribers: SubscriberRow[] = await manager.query(
        'SELECT id, account_id, events FROM webhooks WHERE enabled AND account_id = ANY($1)',
        [[...new Set(events.map((e) => e.account_id))]],
      );
      const fullBodies: { id: string; account_id: string; event_type: string; payload: Record<string, unknown> }[] = [];
      const deliveries = events.flatMap((event) => {
        const eventId = newId('evt');
        const targets = subscribers.filter((webhook) => webhook.account_id === event.account_id && webhook.events.includes(event.type));
        if (targets.length === 0) return [];
        const { payload, thin } = capPayload(eventId, event.payload, maxBytes, `${publicUrl}/email/webhooks/events/${eventId}`);
        if (thin) fullBodies.push({ id: eventId, account_id: event.account_id, event_type: event.type, payload: event.payload });
        return targets.map((webhook) => ({
          id: newId('whd'),
          account_id: event.account_id,
          webhook_id: webhook.id,
          event_id: eventId,
          event_type: event.type,
          payload,
        }));
      });
      if (fullBodies.length > 0) {
        await manager.query(
          `INSERT INTO webhook_event_bodies (id, account_id, event_type, payload)
           SELECT b.id, b.account_id, b.event_type, b.payload
           FROM jsonb_to_recordset($1::jsonb) AS b(id varchar, account_id varchar, event_type varchar, payload jsonb)`,
          [JSON.stringify(fullBodies)],
        );
      }
      if (deliveries.length > 0) {
        await manager.query(
          `INSERT INTO webhook_deliveries (id, account_id, webhook_id, event_id, event_type, payload, status, next_attempt_at)
           SELECT d.id, d.account_id, d.webhook_id, d.event_id, d.event_type, d.payload, 'pending', now()
           FROM jsonb_to_recordset($1::jsonb) AS d(id varchar, account_id varchar, webhook_id varchar, event_id varchar, event_type varchar, payload jsonb)`,
          [JSON.stringify(deliveries)],
        );
      }
      await manager.query('UPDATE event_outbox SET published_at = now() WHERE id = ANY($1::bigint[])', [events.map((e) => e.id)]);
      return { events, deliveryIds: deliveries.map((d) => d.id) };
    });
    try {
      await this.webhookQueue.add(deliveryIds.map((deliveryId) => ({ deliveryId, attempt: 1 })));
    } catch (err) {
      this.logger.warn(`Could not queue ${deliveryIds.length} webhook deliveries, the sweeper will: ${(err as Error).message}`);
    }
    return events.length;
  }
}
