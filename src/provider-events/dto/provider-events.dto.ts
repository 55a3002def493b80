import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsISO8601,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUrl,
  MaxLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { BOUNCE_TYPES, type BounceType, MAX_PROVIDER_EVENTS, PROVIDER_EVENT_TYPES, type ProviderEventType } from '../provider-event-rules';

/** One event in the provider's normalized form (D-24). */
export class ProviderEventDto {
  @ApiPropertyOptional({
    example: 'msg_4fQ2xY7bN1kLp0sT9uVw3a',
    description:
      'Our message id (`msg_…`, as the send answered it), or else the RFC 5322 Message-ID of the ' +
      'email, with or without its angle brackets. A Message-ID is a fallback, and not exact: forwarded mail keeps its ' +
      'original’s, so one Message-ID may name messages of several accounts. It applies only when exactly one message ' +
      'with it, in any account, was sent to `recipient` (without `recipient`: exactly one message has it); else the ' +
      'event is ignored and logged as a warning. Send `returnPath` or our `msg_…` id to name the message exactly. ' +
      'Required unless `returnPath` is given.',
  })
  @ValidateIf((event: ProviderEventDto) => event.returnPath === undefined || event.messageId !== undefined)
  @IsString()
  @IsNotEmpty()
  @MaxLength(300)
  messageId?: string;

  @ApiPropertyOptional({
    example: 'bounces+ge2dgmzv-ab3cdefghijkl@bounces.example.com',
    description:
      'The envelope sender (MAIL FROM, Return-Path) the provider saw: a VERP return path of ours names the message ' +
      'exactly, and wins over `messageId`.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  returnPath?: string;

  @ApiProperty({ enum: PROVIDER_EVENT_TYPES, description: '`bounced` means a permanent (hard) bounce; temporary failures are `deferred`.' })
  @IsIn(PROVIDER_EVENT_TYPES, { message: `type must be one of ${PROVIDER_EVENT_TYPES.join(', ')}` })
  type: ProviderEventType;

  @ApiPropertyOptional({
    enum: BOUNCE_TYPES,
    description:
      '`bounced` only: `soft` for a transient bounce the provider gave up on (SES `Transient`, Postmark `SoftBounce`). ' +
      'Without it, a bounce whose reason has only 4.x.x / 4xx codes is soft. A soft bounce does not suppress its ' +
      'recipient: `SOFT_BOUNCE_SUPPRESS_COUNT` of them within `SOFT_BOUNCE_WINDOW_DAYS` do.',
  })
  @IsOptional()
  @IsIn(BOUNCE_TYPES, { message: `bounceType must be one of ${BOUNCE_TYPES.join(', ')}` })
  bounceType?: BounceType;

  @ApiPropertyOptional({
    example: 'ada@example.org',
    description:
      'The recipient the event is about; must be one of the message’s (else the event is ignored). Optional for a ' +
      'message with one recipient; required for bounces and complaints of a message with several.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  recipient?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    example: '2025-05-01T12:00:00Z',
    description: 'When it happened at the provider; default now.',
  })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'timestamp must be an ISO 8601 date-time' })
  timestamp?: string;

  @ApiPropertyOptional({
    example: '550 5.1.1 mailbox does not exist',
    description:
      'The provider’s reason (bounces, deferrals, complaints). A bounce’s SMTP reply and enhanced status codes decide whether ' +
      'its recipient is suppressed (5.7.x policy or content refusals are not).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  reason?: string;

  @ApiPropertyOptional({ example: 'https://example.org/pricing', description: 'The link followed (`clicked`).' })
  @IsOptional()
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'url must be an http(s) URL' })
  @MaxLength(2048)
  url?: string;
}

/**
 * The body as validated: a bare event and a bare array arrive here wrapped as `{events: [...]}` (see
 * normalizeEventsBody), so errors always name `events[i].field`.
 */
export class ProviderEventsDto {
  @ApiProperty({ type: [ProviderEventDto], maxItems: MAX_PROVIDER_EVENTS })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_PROVIDER_EVENTS)
  @ValidateNested({ each: true })
  @Type(() => ProviderEventDto)
  events: ProviderEventDto[];
}

export class ProviderEventsResultDto {
  @ApiProperty({ example: 3, description: 'Events in the call.' })
  received: number;

  @ApiProperty({
    example: 2,
    description: 'Events recorded on their message (a status moves only forward; a late event is recorded all the same).',
  })
  applied: number;

  @ApiProperty({
    example: 1,
    description: 'Events left alone: unknown message, an address the message was not sent to, or the whole call already applied.',
  })
  ignored: number;

  @ApiPropertyOptional({ example: true, description: 'Present when this webhook-id was applied before: nothing was done again.' })
  duplicate?: true;
}
