import { Column, CreateDateColumn, Entity, Index } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/**
 * The full body of an event too large for a webhook (WEBHOOK_MAX_PAYLOAD_BYTES): its deliveries carry a thin
 * event, and `GET /email/webhooks/events/{id}` answers this. One row per event, whatever the number of webhooks;
 * `id` is the event id (`evt_…`). It goes once its deliveries have gone (retention).
 */
@Entity('webhook_event_bodies')
@Index('IX_webhook_event_bodies_created', ['createdAt'])
export class WebhookEventBody extends AccountOwned {
  @Column({ type: 'varchar', length: 40 })
  eventType: string;

  /** The event as it would have been delivered, without its id. */
  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
