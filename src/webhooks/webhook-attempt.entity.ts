import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { WebhookDelivery } from './webhook-delivery.entity';

/** One HTTP request of a delivery, for its log. */
@Entity('webhook_attempts')
@Index('UQ_webhook_attempts_delivery_attempt', ['deliveryId', 'attempt'], { unique: true })
export class WebhookAttempt {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 40 })
  deliveryId: string;

  @ManyToOne(() => WebhookDelivery, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'delivery_id' })
  delivery?: WebhookDelivery;

  /** 1, 2, …: counts on across replays. */
  @Column({ type: 'int' })
  attempt: number;

  @Column({ type: 'timestamptz' })
  startedAt: Date;

  @Column({ type: 'int' })
  durationMs: number;

  /** The receiver's HTTP status; null when no answer came (refused address, connection error, time-out). */
  @Column({ type: 'int', nullable: true })
  statusCode: number | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  /** The start of the receiver's answer body, at most 1 KB. */
  @Column({ type: 'text', nullable: true })
  response: string | null;

  @Column({ type: 'boolean' })
  succeeded: boolean;
}
