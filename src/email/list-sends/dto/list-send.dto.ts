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
    description: 'Subscribed subscribers not on the suppression list at acceptance: the messages it will make',
  })
  queued: number;
}

export class ListSendDto {
  @ApiProperty({ example: 'lsnd_4fQ2mT0kLw2sZr8NcY1pXb' })
  id: string;

  @ApiProperty({ example: 'list_4fQ2mT0kLw2sZr8NcY1pXb' })
  listId: string;

  @ApiProperty({ enum: LIST_SEND_STATUSES, description: 'queued, then sending while its messages are made, then done' })
  status: ListSendStatus;

  @ApiProperty({ example: 1250, description: 'Messages made so far, one per subscriber (each followed at GET /email/status/{messageId})' })
  queued: number;

  @ApiProperty({ example: 3, description: 'Subscribers skipped so far: on the suppression list' })
  suppressed: number;

  @ApiProperty({ example: 0, description: 'Subscribers skipped so far: their message could not be rendered' })
  failed: number;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When the last message was made' })
  completedAt: string | null;

  static from(send: ListSend): ListSendDto {
    return {
      id: send.id,
      listId: send.listId,
      status: send.status,
      queued: send.queued,
      suppressed: send.suppressed,
      failed: send.failed,
      createdAt: send.createdAt.toISOString(),
      completedAt: send.completedAt?.toISOString() ?? null,
    };
  }
}
