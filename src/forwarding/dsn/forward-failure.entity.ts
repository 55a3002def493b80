import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Message } from '../../outbox/message.entity';

/**
 * A destination of a forwarded message that will not get it (refused with a 5xx, or never taken before the retries
 * ran out), written in the same statement as the move that says so. Its sender is owed a delivery status notification
 * (RFC 3464): DsnService makes it and sets reportedAt in the same commit. The key makes each destination of a
 * message reported once, however often its job runs.
 */
@Entity('forward_failures')
@Index('IX_forward_failures_unreported', ['failedAt'], { where: '"reported_at" IS NULL' })
export class ForwardFailure {
  /** The forwarded message. */
  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_forward_failures' })
  messageId: string;

  @ManyToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id' })
  message?: Message;

  /** The destination, as the message's recipients spell it. */
  @PrimaryColumn({ type: 'varchar', length: 320, primaryKeyConstraintName: 'PK_forward_failures' })
  recipient: string;

  /** RFC 3463 status code: `5.1.1`, `4.4.7`. */
  @Column({ type: 'varchar', length: 12 })
  status: string;

  /** RFC 3464 Diagnostic-Code, typed: `smtp; 550 5.1.1 No such user`, `X-Mailroom; delivery time expired`. */
  @Column({ type: 'text' })
  diagnostic: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  failedAt: Date;

  /** When the notification was made (or found not owed: a sender that takes none); null until then. */
  @Column({ type: 'timestamptz', nullable: true })
  reportedAt: Date | null;

  /**
   * Reports of it that failed (an error, not a sender owed nothing): at MAX_REPORT_ATTEMPTS it is marked reported
   * without a notification, so that what can never be reported does not hold up the rest.
   */
  @Column({ type: 'int', default: 0 })
  reportAttempts: number;

  /** The notification's message; null until reported, and when none was owed. */
  @Column({ type: 'varchar', length: 40, nullable: true })
  dsnMessageId: string | null;
}
