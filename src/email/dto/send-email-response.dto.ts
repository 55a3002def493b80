import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class SendEmailResponseDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ example: 'msg_4fQ2xY7bN1kLp0sT9uVw3a' })
  messageId: string;

  @ApiProperty({ enum: ['queued', 'scheduled'], description: 'The message is stored: delivery happens in the background.' })
  status: 'queued' | 'scheduled';

  @ApiPropertyOptional({
    type: [String],
    example: ['bounced@example.org'],
    description: 'Recipients left out because they are on the suppression list.',
  })
  suppressed?: string[];
}
