import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsEmail,
  IsIn,
  IsISO8601,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { IsStringMap } from '../../common/validation/is-string-map.validator';
import { MESSAGE_METADATA_LIMITS, TrackingDto } from '../dto/send-email.dto';
import { MessagePriority, PRIORITIES } from '../message.entity';

/** D-14: recipients one batch call takes. */
export const MAX_BATCH_RECIPIENTS = 500;

export class BatchRecipientDto {
  @ApiProperty({ example: 'ada@example.org', maxLength: 320 })
  @IsString()
  @MaxLength(320)
  @IsEmail({ allow_display_name: false, allow_ip_domain: false }, { message: 'email must be an email address' })
  email: string;

  @ApiPropertyOptional({ example: 'Ada Lovelace', maxLength: 200, description: 'Shown in the To header and given to the template as {{name}}.' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Matches(/^[^\r\n]*$/, { message: 'name may not contain CR or LF' })
  name?: string;

  @ApiPropertyOptional({ example: { plan: 'Pro' }, description: 'Values for this recipient’s placeholders.' })
  @IsOptional()
  @IsObject()
  variables?: Record<string, unknown>;
}

/**
 * The spec's batch send (template + recipients) with the fields of a send that fit one message per recipient
 * (D-15): `from` besides the spec's, inline content, tracking, metadata, schedule, priority and headers.
 */
export class BatchSendDto {
  @ApiProperty({
    example: 'Acme <hello@mail.acme.com>',
    description: 'Sender; its domain must be a verified domain of the account (403 DOMAIN_NOT_VERIFIED).',
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(998)
  from: string;

  @ApiPropertyOptional({ example: 'welcome', description: 'Name of a stored template. Without one, subject and html or text are required.' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  template?: string;

  @ApiPropertyOptional({ example: 'Welcome, {{name}}', description: 'Handlebars; replaces the template’s subject.' })
  @IsOptional()
  @IsString()
  subject?: string;

  @ApiPropertyOptional({ description: 'Handlebars HTML body; replaces the template’s.' })
  @IsOptional()
  @IsString()
  html?: string;

  @ApiPropertyOptional({ description: 'Handlebars plain-text body; replaces the template’s.' })
  @IsOptional()
  @IsString()
  text?: string;

  @ApiProperty({
    type: [BatchRecipientDto],
    minItems: 1,
    maxItems: MAX_BATCH_RECIPIENTS,
    description:
      'One message each, rendered with its variables plus email, name and unsubscribeUrl. One invalid recipient refuses the ' +
      'whole call (400 naming each recipients[i].email): nothing is sent.',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH_RECIPIENTS)
  @ValidateNested({ each: true })
  @Type(() => BatchRecipientDto)
  recipients: BatchRecipientDto[];

  @ApiPropertyOptional({ type: TrackingDto, description: 'Open, click and unsubscribe tracking (D-22), for every message.' })
  @IsOptional()
  @ValidateNested()
  @Type(() => TrackingDto)
  tracking?: TrackingDto;

  @ApiPropertyOptional({ example: { campaign: 'spring-sale' }, description: 'Your own labels, returned in every webhook event of each message.' })
  @IsOptional()
  @IsStringMap(MESSAGE_METADATA_LIMITS)
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ example: '2026-12-24T09:00:00Z', description: 'Deliver at this time. In the past: now. At most 30 days ahead.' })
  @IsOptional()
  @IsISO8601({ strict: true })
  scheduleFor?: string;

  @ApiPropertyOptional({ enum: PRIORITIES, default: 'normal', description: 'Queue priority.' })
  @IsOptional()
  @IsIn(PRIORITIES)
  priority?: MessagePriority;

  @ApiPropertyOptional({ example: { 'Reply-To': 'support@acme.com' }, description: 'Custom headers of every message, as in a send.' })
  @IsOptional()
  @IsObject()
  headers?: Record<string, string>;
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
