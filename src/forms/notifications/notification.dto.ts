import { ApiProperty } from '@nestjs/swagger';
import { SUPPRESSION_REASONS, type SuppressionEntry } from '../../suppression/suppression-entry.entity';
import type { HeldNotificationRecipient } from '../form-submission.entity';
import { NOTIFICATION_STATUSES, type NotificationStatus, type SubmissionNotification } from './notification-state';

export class HeldRecipientDto {
  @ApiProperty({ example: 'owner@example.com' })
  email: string;

  @ApiProperty({ enum: SUPPRESSION_REASONS, example: 'bounced', description: 'Why the address is suppressed' })
  reason: string;

  @ApiProperty({ format: 'date-time', description: 'Suppressed since' })
  since: string;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'msg_8Jk2Lr9XwT4mPz1Vb8Ks3N',
    description: 'What suppressed it: the message that bounced, api, …',
  })
  source: string | null;

  static readonly from = (held: HeldNotificationRecipient): HeldRecipientDto => ({ ...held });
}

export class SubmissionNotificationDto {
  @ApiProperty({
    enum: NOTIFICATION_STATUSES,
    description:
      'none (spam, an unconfirmed instant form), held (a recipient is suppressed: sent once the suppression is lifted), ' +
      'queued, sent, delivered, bounced, failed',
  })
  status: NotificationStatus;

  @ApiProperty({
    type: String,
    nullable: true,
    example:
      'notification not sent: recipient owner@example.com suppressed since 2026-06-09T10:00:00.000Z (bounced, message msg_8Jk2…); ' +
      'it is sent once the address is taken off the suppression list',
    description: 'Why nothing was sent or what went wrong; null when all is well',
  })
  detail: string | null;

  @ApiProperty({
    type: [String],
    example: ['msg_2Vh7Qm9LrX4tKp1Zb8Ns3W'],
    description: 'The notification messages (GET /email/status/{messageId})',
  })
  messageIds: string[];

  @ApiProperty({ type: [HeldRecipientDto], description: 'Recipients the notification waits for: suppressed when it was sent' })
  heldRecipients: HeldRecipientDto[];

  static readonly from = (n: SubmissionNotification): SubmissionNotificationDto => ({
    status: n.status,
    detail: n.detail,
    messageIds: n.messageIds,
    heldRecipients: n.heldRecipients.map(HeldRecipientDto.from),
  });
}

/** A notification recipient of a form on the suppression list now: its notifications are held until it is taken off. */
export class SuppressedRecipientDto {
  @ApiProperty({ example: 'owner@example.com' })
  email: string;

  @ApiProperty({ enum: SUPPRESSION_REASONS })
  reason: string;

  @ApiProperty({ format: 'date-time' })
  since: string;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'msg_8Jk2Lr9XwT4mPz1Vb8Ks3N',
    description: 'What suppressed it: the message that bounced, api, …',
  })
  source: string | null;

  static readonly from = (entry: SuppressionEntry): SuppressedRecipientDto => ({
    email: entry.email,
    reason: entry.reason,
    since: entry.createdAt.toISOString(),
    source: entry.source,
  });
}
