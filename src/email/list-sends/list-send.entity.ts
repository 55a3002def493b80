import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../../accounts/account-owned';
import { MailingList } from '../../lists/mailing-list.entity';
import type { PreparedSend } from '../personal-messages';

export const LIST_SEND_STATUSES = ['queued', 'sending', 'done'] as const;
export type ListSendStatus = (typeof LIST_SEND_STATUSES)[number];

/**
 * A send to a mailing list (`lsnd_…`): accepted with its request, then fanned out by the `list-sends` queue a
 * page of subscribers at a time. Each page's messages commit together with the move of `cursor`, so a worker
 * that dies resumes after the last committed page.
 */
@Entity('list_sends')
@Index('IX_list_sends_unfinished', ['updatedAt'], { where: `"status" <> 'done'` })
export class ListSend extends AccountOwned {
  @Column({ type: 'varchar', length: 40 })
  listId: string;

  @ManyToOne(() => MailingList, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'list_id' })
  list?: MailingList;

  /** The send, checked and resolved at acceptance (the template's content as it was then). */
  @Column({ type: 'jsonb' })
  request: PreparedSend;

  @Column({ type: 'varchar', length: 8, default: 'queued' })
  status: ListSendStatus;

  /** The last subscriber address a committed page reached; null before the first page. */
  @Column({ type: 'varchar', length: 320, nullable: true })
  cursor: string | null;

  /** Messages made so far. */
  @Column({ type: 'int', default: 0 })
  queued: number;

  /** Subscribers skipped so far because their address is on the suppression list. */
  @Column({ type: 'int', default: 0 })
  suppressed: number;

  /** Subscribers whose message could not be made (their rendering failed). */
  @Column({ type: 'int', default: 0 })
  failed: number;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  completedAt: Date | null;
}
