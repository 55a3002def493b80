import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import { Webhook } from './webhook.entity';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event for one webhook: its payload as published, and where its attempts stand. */
@Entity('webhook_deliveries')
@Index('IX_webhook_deliveries_webhook_created', ['webhookId', 'createdAt', 'id'])
@Index('UQ_webhook_deliveries_event_webhook', ['eventId', 'webhookId'], { unique: true })
@Index('IX_webhook_deliveries_pending', ['nextAttemptAt'], { where: `"status" = 'pending'` })
@Index('IX_webhook_deliveries_finished', ['updatedAt'], { where: `"status" <> 'pending'` })
export class WebhookDelivery extends AccountOwned {
  @Column({ type: 'varchar', length: 40 })
  webhookId: string;

  @ManyToOne(() => Webhook, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'webhook_id' })
  webhook?: Webhook;

  /** `evt_…`, one per outbox event: the same for every webhook of that event, every retry and every replay (`webhook-id`). */
  @Column({ type: 'varchar', length: 40 })
  eventId: string;

  @Column({ type: 'varchar', length: 40 })
  eventType: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @Column({ type: 'varchar', length: 10 })
  status: DeliveryStatus;

  /** Attempts made, every round included. */
  @Column({ type: 'int', default: 0 })
  attempts: number;

  /** Number of the first attempt of the current round: 1, or the first attempt of the latest replay (which gets the whole retry schedule again). */
  @Column({ type: 'int', default: 1 })
  roundFirstAttempt: number;

  /** When the next attempt is due; null once the delivery succeeded or failed. */
  @Column({ type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  @Column({ type: 'int', nullable: true })
  lastStatusCode: number | null;

  /** Milliseconds, like the JavaScript Date in a listing cursor: a whole batch shares one now(). */
  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
