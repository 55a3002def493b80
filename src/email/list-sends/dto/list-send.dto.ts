import { ApiProperty } from '@nestjs/swagger';
import { LIST_SEND_STATUSES, ListSend, type ListSendStatus } from '../list-send.entity';

/** The answer to POST /email/send with `list`. */
export class ListSendAcceptedDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ example: 'lsnd_4fQ2mT0kLw2sZr8NcY1pXb', description: 'Follow it at GET /email/lists/{listId}/sends/{listSendId}' })
  listSendId: string;

  @ApiProperty({ example: 'list_4fQ2mT0kLw2sZr8NcY1pXb' })
  listId: string;

  @ApiProperty({ enum: ['queued'], description: 'The send is stored; its messages are made in the background.' })
  status: 'queued';

  @ApiProperty({
    example: 1250,
    description:
      'Subscribed subscribers not on the suppression list at acceptance, counted against the quotas now. The send ' +
      'counts the messages it makes in the end: more if the list grows meanwhile, fewer (the rest given back) if it shrinks.',
  })
  queued: number;
}

export class ListSendDto {
  @ApiProperty({ example: 'lsnd_4fQ2mT0kLw2sZr8NcY1pXb' })
  id: string;

  @ApiProperty({ example: 'list_4fQ2mT0kLw2sZr8NcY1pXb' })
  listId: string;

  @ApiProperty({
    enum: LIST_SEND_STATUSES,
    description:
      'queued, then sending while its messages are made, then done; or stopped: a quota ran out while the list grew ' +
      'past what was counted at acceptance (stoppedReason, refused); or failed: making its messages kept failing, ' +
      'LIST_SEND_MAX_ATTEMPTS times (lastError, refused). The messages made before it stopped or failed are sent.',
  })
  status: ListSendStatus;

  @ApiProperty({ example: 1250, description: 'Messages made so far, one per subscriber (each followed at GET /email/status/{messageId})' })
  queued: number;

  @ApiProperty({ example: 3, description: 'Subscribers skipped so far: on the suppression list' })
  suppressed: number;

  @ApiProperty({ example: 0, description: 'Subscribers skipped so far: their message could not be rendered' })
  failed: number;

  @ApiProperty({
    example: 0,
    description: 'A stopped or failed send: subscribers it did not write to (subscribed and not suppressed past where it ended)',
  })
  refused: number;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'A stopped send: the quota that ran out (emails_per_month, global_hourly, global_daily, global_monthly); null otherwise',
  })
  stoppedReason: string | null;

  @ApiProperty({
    example: 1,
    description: 'Runs of its fan-out so far; it is failed after LIST_SEND_MAX_ATTEMPTS (10 by default) that failed or never ended',
  })
  attempts: number;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description:
      'Why its last failed run failed (a failed send: why it failed, after how many attempts); null when no run failed. ' +
      'Errors of the server are not detailed here: the operator finds them in the server log and in Bull Board.',
  })
  lastError: string | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When it ended (done, stopped or failed)' })
  completedAt: string | null;

  static from(send: ListSend): ListSendDto {
    return {
      id: send.id,
      listId: send.listId,
      status: send.status,
      queued: send.queued,
      suppressed: send.suppressed,
      failed: send.failed,
      refused: send.refused,
      stoppedReason: send.stoppedReason,
      attempts: send.attempts,
      lastError: send.lastError,
      createdAt: send.createdAt.toISOString(),
      completedAt: send.completedAt?.toISOString() ?? null,
    };
  }
}
