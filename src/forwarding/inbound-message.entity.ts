import { Column, CreateDateColumn, Entity, Index } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/**
 * A message the inbound SMTP server took for one forwarding domain (D-31), stored before its 250: the bytes as
 * they arrived, and the trace headers Mailroom puts on top when it forwards them. The forwarded messages
 * (`messages.inbound_message_id`) are sent from it.
 */
@Entity('inbound_messages')
@Index('IX_inbound_messages_account_created', ['accountId', 'createdAt'])
@Index('IX_inbound_messages_unswept', ['createdAt'], { where: '"source_swept_at" IS NULL' })
export class InboundMessage extends AccountOwned {
  /** The forwarding domain (lower-cased) whose addresses the message was for. */
  @Column({ type: 'varchar', length: 253 })
  domain: string;

  /** The envelope sender as given (MAIL FROM); '' for a bounce (`MAIL FROM:<>`). */
  @Column({ type: 'varchar', length: 320 })
  mailFrom: string;

  /**
   * MAIL FROM passed SPF, or DKIM for a domain aligned with it, at DATA: only then is it sent delivery status
   * notifications about the forwards (to a forged one they would be backscatter).
   */
  @Column({ type: 'boolean', default: false })
  mailFromAuthenticated: boolean;

  /** The envelope recipients on this domain (RCPT TO), as given. */
  @Column({ type: 'jsonb' })
  recipients: string[];

  @Column({ type: 'varchar', length: 45 })
  clientAddress: string;

  /** The client's HELO/EHLO name. */
  @Column({ type: 'varchar', length: 255 })
  helo: string;

  /** Header fields added on top when forwarding (Received, X-Mailroom-Loop), each ending in CRLF. */
  @Column({ type: 'text' })
  trace: string;

  @Column({ type: 'int' })
  size: number;

  /** The message exactly as received (after DATA's dot-unstuffing); null once retention cleared it. */
  @Column({ type: 'bytea', nullable: true })
  source: Buffer | null;

  /** When retention cleared `source` (every message forwarding it final for RETENTION_INBOUND_MESSAGES_DAYS). */
  @Column({ type: 'timestamptz', nullable: true })
  sourceSweptAt: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
