import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Message } from '../outbox/message.entity';

export type EngagementType = 'opened' | 'clicked';

/**
 * A message's first open (or click) by a person: the row exists once the message has one. The rollup trigger
 * inserts it with ON CONFLICT DO NOTHING and counts a unique open only when the insert took, so two
 * concurrent statements recording a message's first opens count it once (the second waits on the key and
 * finds it), which a NOT EXISTS over message_events could not promise.
 */
@Entity('message_engagements')
export class MessageEngagement {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  messageId: string;

  @ManyToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id' })
  message?: Message;

  @PrimaryColumn({ type: 'varchar', length: 10 })
  type: EngagementType;

  /** When that first open or click happened. */
  @Column({ type: 'timestamptz' })
  occurredAt: Date;
}
