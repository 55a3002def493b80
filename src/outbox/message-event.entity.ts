import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Message } from './message.entity';

/** Event types of a message (D-15); the tracking and provider-event features add theirs to the same table. */
export type MessageEventType =
  | 'queued'
  | 'scheduled'
  | 'sent'
  | 'delivered'
  | 'deferred'
  | 'bounced'
  | 'failed'
  | 'cancelled'
  | 'suppressed'
  | 'opened'
  | 'clicked'
  | 'complained'
  | 'unsubscribed';

/**
 * The detail of the `failed` event, without a recipient, that ends a message every recipient of which was suppressed:
 * not a failure of its own (its `suppressed` events tell). Migration AddSubmissionNotificationState's
 * message_event_own_failure reads the same text.
 */
export const EVERY_RECIPIENT_SUPPRESSED = 'every recipient is on the suppression list';

/** An event to write with a message's acceptance or a move of its status. */
export interface NewEvent {
  type: MessageEventType;
  recipient?: string | null;
  detail?: string | null;
  /** Made by a machine (an open by a privacy proxy, a link scanner's click). */
  machine?: boolean;
  occurredAt?: Date;
}

/** Something that happened to a message, for GET /email/status/{messageId}. */
@Entity('message_events')
@Index('IX_message_events_message', ['messageId', 'occurredAt'])
// A message unsubscribes each address once: a repeated unsubscribe (one-click and the page, a retry) adds nothing.
@Index('UQ_message_events_unsubscribed', ['messageId', 'recipient'], { unique: true, where: `"type" = 'unsubscribed'` })
export class MessageEvent {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 40 })
  messageId: string;

  @ManyToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id' })
  message?: Message;

  @Column({ type: 'varchar', length: 20 })
  type: MessageEventType;

  /** The recipient the event is about; null when it concerns the whole message. */
  @Column({ type: 'varchar', length: 320, nullable: true })
  recipient: string | null;

  /** Provider response or reason, for people reading the status. */
  @Column({ type: 'text', nullable: true })
  detail: string | null;

  /**
   * Made by a machine, not a person: an open by a mail privacy proxy or a link scanner (how they are recognised:
   * docs/decisions.md). Recorded, and counted apart by analytics.
   */
  @Column({ type: 'boolean', default: false })
  machine: boolean;

  @Column({ type: 'timestamptz' })
  occurredAt: Date;
}
