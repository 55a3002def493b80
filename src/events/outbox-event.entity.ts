import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';

/**
 * An event for the account's webhooks (`form.submission`, …), written in the same statement as what caused
 * it, so that nothing is lost when the process dies after the answer. The webhooks feature publishes them in
 * id order and sets publishedAt.
 */
@Entity('event_outbox')
@Index('IX_event_outbox_unpublished', ['id'], { where: '"published_at" IS NULL' })
@Index('IX_event_outbox_published', ['publishedAt'], { where: '"published_at" IS NOT NULL' })
export class OutboxEvent {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @Column({ type: 'varchar', length: 40 })
  type: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  publishedAt: Date | null;
}
