import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import type { MessageAttachment } from './attachments/attachment-content';

/** Message states (D-15). `delivered` arrives later from provider events. */
export const MESSAGE_STATUSES = ['queued', 'scheduled', 'sent', 'delivered', 'deferred', 'bounced', 'failed', 'cancelled'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** States in which a message still waits for a delivery attempt (and so must have a queue job). */
export const AWAITING_DELIVERY: readonly MessageStatus[] = ['queued', 'scheduled', 'deferred'];

/** States no attempt follows: the body is no longer needed to send (retention may clear it). */
export const FINAL_STATUSES: readonly MessageStatus[] = ['sent', 'delivered', 'bounced', 'failed', 'cancelled'];

export const PRIORITIES = ['high', 'normal', 'low'] as const;
export type MessagePriority = (typeof PRIORITIES)[number];

/**
 * What the message is made of, as accepted: enough to compose the same MIME bytes at every attempt
 * (composition is deterministic: fixed Date, Message-ID and multipart boundaries).
 */
export interface MessageContent {
  from: { name: string; address: string };
  to: { name: string; address: string }[];
  cc: { name: string; address: string }[];
  replyTo: { name: string; address: string }[];
  subject: string;
  text?: string;
  html?: string;
  headers: Record<string, string>;
  /** References to bytes in the AttachmentStore; messages accepted before it hold base64 here. */
  attachments: MessageAttachment[];
  /** The Date header, ISO 8601. */
  date: string;
}

export interface MessageTracking {
  opens?: boolean;
  clicks?: boolean;
  unsubscribe?: boolean;
}

/**
 * One accepted send (D-15): its envelope and its content, from which every attempt composes the same
 * bytes with the same Message-ID (D-16).
 */
@Entity('messages')
@Index('IX_messages_account_created', ['accountId', 'createdAt'])
@Index('IX_messages_awaiting_delivery', ['updatedAt'], { where: `"status" IN ('queued', 'scheduled', 'deferred')` })
/** Provider events (D-24) may name a message by its RFC 5322 Message-ID. */
@Index('IX_messages_header_message_id', ['headerMessageId'])
/** Retention: final messages still holding their body, oldest status move first. */
@Index('IX_messages_content_retention', ['updatedAt'], {
  where: `"content_swept_at" IS NULL AND "status" IN ('sent', 'delivered', 'bounced', 'failed', 'cancelled')`,
})
@Index('IX_messages_inbound_message', ['inboundMessageId'], { where: '"inbound_message_id" IS NOT NULL' })
export class Message extends AccountOwned {
  @Column({ type: 'varchar', length: 12 })
  status: MessageStatus;

  /** The bare address of `from`. */
  @Column({ type: 'varchar', length: 320 })
  fromAddress: string;

  /**
   * The envelope sender (MAIL FROM) when it is not the VERP return path every other message has (D-31):
   * forwarded mail's SRS address, or '' for a bounce relayed back to its sender (`MAIL FROM:<>`).
   */
  @Column({ type: 'varchar', length: 320, nullable: true })
  envelopeFrom: string | null;

  /** Forwarded mail: the received message whose bytes are sent as they arrived, instead of composing `content`. */
  @Column({ type: 'varchar', length: 40, nullable: true })
  inboundMessageId: string | null;

  /** Lower-cased domain of `fromAddress` (forwarded mail: the forwarding domain): whose DKIM key signs the message. */
  @Column({ type: 'varchar', length: 253 })
  fromDomain: string;

  @Column({ type: 'text' })
  subject: string;

  /** Every envelope recipient (to, cc, bcc) the message goes to, suppressed ones excluded. */
  @Column({ type: 'jsonb' })
  recipients: string[];

  /** Recipients without a final answer yet: the next attempt sends to these only. */
  @Column({ type: 'jsonb' })
  pendingRecipients: string[];

  /** Recipients dropped at acceptance because they are on the suppression list (D-19). */
  @Column({ type: 'jsonb' })
  suppressedRecipients: string[];

  /** The RFC 5322 Message-ID, with its angle brackets. */
  @Column({ type: 'varchar', length: 300 })
  headerMessageId: string;

  @Column({ type: 'jsonb' })
  content: MessageContent;

  /** Length of `content` as JSON when accepted: what a delivery loads (null for messages accepted before it was kept). */
  @Column({ type: 'int', nullable: true })
  contentBytes: number | null;

  @Column({ type: 'varchar', length: 6 })
  priority: MessagePriority;

  @Column({ type: 'timestamptz', nullable: true })
  scheduledFor: Date | null;

  /** As given; the tracking feature serves it. */
  @Column({ type: 'jsonb', nullable: true })
  tracking: MessageTracking | null;

  /** Mailing list id as given; the lists feature serves it. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  listId: string | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  templateName: string | null;

  /** The sender's own labels (`metadata` of the send), repeated in every webhook event of the message. */
  @Column({ type: 'jsonb', nullable: true })
  metadata: Record<string, string> | null;

  /**
   * Sent by Mailroom itself (form notifications, confirmations) from FORMS_FROM: signed with the key of the
   * verified domain of that name, whichever account holds it (the operator's), else sent unsigned.
   */
  @Column({ type: 'boolean', default: false })
  systemSender: boolean;

  @Column({ type: 'int', default: 0 })
  attempts: number;

  @Column({ type: 'text', nullable: true })
  lastError: string | null;

  /**
   * A deferred message: when its next attempt is due by the D-20 schedule. The sweeper re-adding a lost job delays
   * it until then. Null for messages not deferred (and those deferred before it was kept).
   */
  @Column({ type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  sentAt: Date | null;

  /**
   * When retention cleared the body (text, html, custom headers, attachments) of `content`; its envelope
   * (from, to, cc, replyTo, subject, date), status and events stay. Null while the body is kept.
   */
  @Column({ type: 'timestamptz', nullable: true })
  contentSweptAt: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
