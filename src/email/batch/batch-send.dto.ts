import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsEmail,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { SendEmailDto } from '../dto/send-email.dto';

/** D-14: recipients one batch call takes. */
export const MAX_BATCH_RECIPIENTS = 500;

export class BatchRecipientDto {
  @ApiProperty({ example: 'ada@example.org', maxLength: 320 })
  @IsString()
  @MaxLength(320)
  @IsEmail({ allow_display_name: false, allow_ip_domain: false }, { message: 'email must be an email address' })
  email: string;

  @ApiPropertyOptional({
    example: 'Ada Lovelace',
    maxLength: 200,
    description: 'Shown in the To header and given to the template as {{name}}, unless this recipient’s variables give a name.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Matches(/^[^\r\n]*$/, { message: 'name may not contain CR or LF' })
  name?: string;

  @ApiPropertyOptional({
    example: { name: 'Ada', plan: 'Pro' },
    description: 'Values for this recipient’s placeholders. They win over email and name: those fill in only what they leave out.',
  })
  @IsOptional()
  @IsObject()
  variables?: Record<string, unknown>;
}

/**
 * The spec's batch send (template + recipients) with the fields of a send that fit one message per recipient
 * (D-15): `from` besides the spec's, inline content (Handlebars), tracking, metadata, schedule, priority and
 * headers, validated as in a send.
 */
export class BatchSendDto extends PickType(SendEmailDto, [
  'from',
  'template',
  'subject',
  'html',
  'text',
  'tracking',
  'metadata',
  'scheduleFor',
  'priority',
  'headers',
] as const) {
  @ApiProperty({
    type: [BatchRecipientDto],
    minItems: 1,
    maxItems: MAX_BATCH_RECIPIENTS,
    description:
      "One message each, rendered with its variables, email and name where its variables do not give them (name '' when " +
      'given nowhere), and unsubscribeUrl. One invalid recipient refuses the ' +
      'whole call (400 naming each recipients[i].email): nothing is sent.',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH_RECIPIENTS)
  @ValidateNested({ each: true })
  @Type(() => BatchRecipientDto)
  recipients: BatchRecipientDto[];
}

export class BatchResultDto {
  @ApiProperty({ example: 'ada@example.org' })
  email: string;

  @ApiProperty({ type: String, nullable: true, example: 'msg_4fQ2xY7bN1kLp0sT9uVw3a', description: 'null when suppressed' })
  messageId: string | null;

  @ApiProperty({ enum: ['queued', 'scheduled', 'suppressed'] })
  status: 'queued' | 'scheduled' | 'suppressed';
}

export class BatchSendResponseDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ type: [BatchResultDto], description: 'One entry per recipient, in the order given' })
  data: BatchResultDto[];
}
