import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/** What a webhook can subscribe to (D-23): the spec's four, then sent, complained, unsubscribed and form submissions. */
export const WEBHOOK_EVENT_TYPES = [
  'delivered',
  'bounced',
  'opened',
  'clicked',
  'sent',
  'complained',
  'unsubscribed',
  'form.submission',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A URL of the account's that receives signed events of the types it subscribed to (D-23). */
@Entity('webhooks')
@Index('IX_webhooks_account', ['accountId'])
export class Webhook extends AccountOwned {
  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'varchar', length: 40, array: true })
  events: WebhookEventType[];

  @Column({ type: 'varchar', length: 500, nullable: true })
  description: string | null;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** `whsec_…`, sealed with SecretBox. */
  @Column({ type: 'text' })
  secret: string;

  /** The secret before the last rotation, sealed: it signs too until previousSecretExpiresAt. */
  @Column({ type: 'text', nullable: true })
  previousSecret: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
