import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { MESSAGE_STATUSES, MessageStatus } from '../../outbox/message.entity';

export class MessageEventDto {
  @ApiProperty({
    example: 'sent',
    description: 'queued, scheduled, sent, delivered, deferred, bounced, failed, cancelled, suppressed, opened, clicked, …',
  })
  type: string;

  @ApiProperty({ format: 'date-time' })
  timestamp: string;

  @ApiPropertyOptional({ example: 'ada@example.org', description: 'The recipient the event concerns, if only one.' })
  recipient?: string;

  @ApiPropertyOptional({ example: '250 2.0.0 OK queued', description: 'Provider response or reason.' })
  detail?: string;

  @ApiPropertyOptional({ example: 'https://acme.test/pricing', description: 'The link that was followed (`clicked` events).' })
  url?: string;

  @ApiPropertyOptional({
    example: true,
    description:
      'Present (true) when a machine made the open or click: a mail privacy proxy, a link scanner, a hit within seconds of sending.',
  })
  machine?: boolean;
}

export class MessageStatusDto {
  @ApiProperty({ example: 'msg_4fQ2xY7bN1kLp0sT9uVw3a' })
  messageId: string;

  @ApiProperty({ enum: MESSAGE_STATUSES })
  status: MessageStatus;

  @ApiProperty({ type: [MessageEventDto], description: 'Oldest first.' })
  events: MessageEventDto[];

  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'Present once retention removed the message’s body (text, HTML, custom headers, attachments): RETENTION_MESSAGE_CONTENT_DAYS ' +
      'after its last move to a final status. Its status and events are kept.',
  })
  contentRemovedAt?: string;
}
