import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import { DEFAULT_MAX_CONCURRENCY } from './webhook-endpoint-limits';

/**
 * What a webhook can subscribe to (D-23): the spec's four, then sent, complained, unsubscribed, form submissions,
 * disables, form notifications not delivered (a suppressed owner address, a bounce or failure), and a message that
 * finally failed or was deferred (a temporary failure, retried later). New types go at the end.
 */
export const WEBHOOK_EVENT_TYPES = [
  'delivered',
  'bounced',
  'opened',
  'clicked',
  'sent',
  'complained',
  'unsubscribed',
  'form.submission',
  'webhook.disabled',
  'form.notification_failed',
  'failed',
  'deferred',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Why a webhook is disabled: it answered 410 Gone, every attempt failed for too long, or through the API. */
export const WEBHOOK_DISABLED_REASONS = ['gone', 'failing', 'manual'] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];

/** A URL of the account's that receives signed events of the types it subscribed to (D-23). */
@Entity('webhooks')
@Index('IX_webhooks_account', ['accountId'])
@Index('IX_webhooks_disabled_notice', ['disabledAt'], { where: '"disabled_notice_pending"' })
export class Webhook extends AccountOwned {
  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'varchar', length: 40, array: true })
  events: WebhookEventType[];

  @Column({ type: 'varchar', length: 500, nullable: true })
  description: string | null;

  /** Requests this endpoint gets at once, across all workers. */
  @Column({ type: 'int', default: DEFAULT_MAX_CONCURRENCY })
  maxConcurrency: number;

  /** Requests this endpoint gets per second (any one-second window), across all workers; null: no limit. */
  @Column({ type: 'int', nullable: true })
  rateLimitPerSecond: number | null;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({ type: 'varchar', length: 20, nullable: true })
  disabledReason: WebhookDisabledReason | null;

  @Column({ type: 'timestamptz', nullable: true })
  disabledAt: Date | null;

  /** The first failed attempt since the last successful one (null while the last one succeeded). */
  @Column({ type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  /** Disabled by Mailroom and the account's contact not yet emailed about it. */
  @Column({ type: 'boolean', default: false })
  disabledNoticePending: boolean;

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
