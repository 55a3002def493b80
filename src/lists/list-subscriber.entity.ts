import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { MailingList } from './mailing-list.entity';

export const SUBSCRIBER_STATUSES = ['subscribed', 'unsubscribed'] as const;
export type SubscriberStatus = (typeof SUBSCRIBER_STATUSES)[number];

/**
 * An address on a mailing list. The key (list, address) is also the order subscribers are paged and list
 * sends walk them in: a cursor is the last address seen.
 */
@Entity('list_subscribers')
@Index('IX_list_subscribers_list_status_email', ['listId', 'status', 'email'])
export class ListSubscriber {
  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_list_subscribers' })
  listId: string;

  /** Lower-cased. */
  @PrimaryColumn({ type: 'varchar', length: 320, primaryKeyConstraintName: 'PK_list_subscribers' })
  email: string;

  @ManyToOne(() => MailingList, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'list_id' })
  list?: MailingList;

  @Column({ type: 'varchar', length: 200, nullable: true })
  name: string | null;

  @Column({ type: 'varchar', length: 12, default: 'subscribed' })
  status: SubscriberStatus;

  @Column({ type: 'timestamptz', nullable: true })
  unsubscribedAt: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
