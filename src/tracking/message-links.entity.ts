import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Message } from '../outbox/message.entity';

/**
 * The URLs a message's click links lead to, written before the message is first handed to the provider: a click
 * is one lookup by key, never a parse of the stored HTML, and keeps working once the message's content is swept.
 */
@Entity('message_links')
export class MessageLinks {
  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_message_links' })
  messageId: string;

  @ManyToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id' })
  message?: Message;

  /** Entry i: the URL of click link i (a JSON array of strings). */
  @Column({ type: 'jsonb' })
  urls: string[];
}
