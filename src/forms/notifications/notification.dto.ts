import { ApiProperty } from '@nestjs/swagger';
import { SUPPRESSION_REASONS, type SuppressionEntry } from '../../suppression/suppression-entry.entity';
import { heldRecipientOf, LIFTED, NOTIFICATION_STATUSES, type NotificationStatus, type SubmissionNotification } from './notification-state';

/**
 * A notification recipient of a form on the suppression list: one a form's notifications are held for now, or one a
 * submission's notification waits for.
 */
export class SuppressedRecipientDto {
  @ApiProperty({ example: 'owner@example.com' })
  email: string;

  @ApiProperty({
    enum: [...SUPPRESSION_REASONS, LIFTED],
    example: 'bounced',
    description: `Why the address is suppressed; ${LIFTED} (a held recipient only): taken off the list as the notification was sent, sent shortly`,
  })
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

  static readonly from = (entry: SuppressionEntry): SuppressedRecipientDto => heldRecipientOf(entry);
}

export class SubmissionNotificationDto {
  @ApiProperty({
    enum: NOTIFICATION_STATUSES,
    description:
      'none (spam, an unconfirmed instant form), not_sent (no message and nobody held: see detail), ' +
      'held (a recipient is suppressed: sent once the suppression is lifted), queued, sent, delivered, bounced, failed',
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

  @ApiProperty({ type: [SuppressedRecipientDto], description: 'Recipients the notification waits for: suppressed when it was sent' })
  heldRecipients: SuppressedRecipientDto[];

  static readonly from = (n: SubmissionNotification): SubmissionNotificationDto => ({
    status: n.status,
    detail: n.detail,
    messageIds: n.messageIds,
    heldRecipients: n.heldRecipients.map((held) => ({ ...held })),
  });
}
