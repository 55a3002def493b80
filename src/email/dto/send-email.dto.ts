import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsISO8601,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { IsBase64 } from '../../common/validation/is-base64.validator';
import { IsStringMap } from '../../common/validation/is-string-map.validator';
import { MessagePriority, PRIORITIES } from '../../outbox/message.entity';

export const MESSAGE_METADATA_LIMITS = { maxKeys: 20, maxKeyLength: 40, maxValueLength: 500 };

const toArray = ({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value);

export class AttachmentDto {
  @ApiProperty({ example: 'invoice.pdf', maxLength: 255 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(255)
  filename: string;

  @ApiProperty({ example: 'JVBERi0xLjQK', description: 'The file, base64-encoded. All attachments together: at most 25 MB decoded.' })
  @IsString()
  @IsBase64({ message: 'content must be base64' })
  content: string;

  @ApiPropertyOptional({ example: 'application/pdf', description: 'MIME type; guessed from the file name when absent.' })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  contentType?: string;
}

export class TrackingDto {
  @ApiPropertyOptional({ description: 'Count opens: the HTML part gets a 1×1 pixel.' })
  @IsOptional()
  @IsBoolean()
  opens?: boolean;

  @ApiPropertyOptional({
    description:
      'Count clicks: every http(s) link of the HTML part is rewritten to pass through Mailroom, which redirects to the original URL.',
  })
  @IsOptional()
  @IsBoolean()
  clicks?: boolean;

  @ApiPropertyOptional({
    description:
      'Mark the message as one people may unsubscribe from (a newsletter, not a receipt): it gets List-Unsubscribe and ' +
      'List-Unsubscribe-Post (RFC 8058 one-click) unless `headers` sets List-Unsubscribe, and `{{unsubscribeUrl}}` is defined for ' +
      'templates. Each recipient gets a copy of their own (one SMTP transaction each, the same Message-ID) whose links name that ' +
      'recipient only. Unsubscribing suppresses the address for the account. Batch sends have it on unless set to false; list ' +
      'sends always carry it, and their unsubscribe takes the address off the list only.',
  })
  @IsOptional()
  @IsBoolean()
  unsubscribe?: boolean;
}

/** The spec's email message. At most 50 recipients in to + cc + bcc (D-14). */
export class SendEmailDto {
  @ApiPropertyOptional({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    example: ['ada@example.org', 'Grace Hopper <grace@example.org>'],
    description: 'One address or a list; `Name <address>` is accepted. Required, except with `list` (where it is refused).',
  })
  @ValidateIf((dto: SendEmailDto) => dto.to !== undefined || dto.list === undefined)
  @Transform(toArray)
  @IsArray({ message: 'to must be an address or a list of addresses' })
  @ArrayMaxSize(50)
  @IsString({ each: true })
  to?: string[];

  @ApiPropertyOptional({ type: [String], example: ['team@example.org'] })
  @IsOptional()
  @Transform(toArray)
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  cc?: string[];

  @ApiPropertyOptional({
    example: ['audit@acme.com'],
    type: [String],
    description: 'Receive the message without appearing in its headers.',
  })
  @IsOptional()
  @Transform(toArray)
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  bcc?: string[];

  @ApiProperty({
    example: 'Acme <hello@mail.acme.com>',
    description: 'Sender; its domain must be a verified domain of the account (403 DOMAIN_NOT_VERIFIED).',
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(998)
  from: string;

  @ApiPropertyOptional({ example: 'Your invoice', description: 'Required unless a template gives one.' })
  @IsOptional()
  @IsString()
  subject?: string;

  @ApiPropertyOptional({ example: 'Hello Ada, your invoice is attached.', description: 'Plain-text body.' })
  @IsOptional()
  @IsString()
  text?: string;

  @ApiPropertyOptional({ example: '<p>Hello Ada, your invoice is attached.</p>', description: 'HTML body.' })
  @IsOptional()
  @IsString()
  html?: string;

  @ApiPropertyOptional({ example: 'welcome', description: 'Name of a stored template; renders subject, html and text.' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  template?: string;

  @ApiPropertyOptional({ example: { name: 'Ada' }, description: 'Values for the template placeholders.' })
  @IsOptional()
  @IsObject()
  variables?: Record<string, unknown>;

  @ApiPropertyOptional({ example: { name: 'Ada' }, description: 'Another name for `variables` (one variant of the endpoint uses it).' })
  @IsOptional()
  @IsObject()
  data?: Record<string, unknown>;

  @ApiPropertyOptional({
    example: { 'Reply-To': 'support@acme.com', 'X-Campaign': 'spring' },
    description:
      'Custom headers, Reply-To included. Names and values may not contain CR or LF; structural headers ' +
      '(From, To, Cc, Bcc, Subject, Message-ID, Date, MIME-*, Content-*, DKIM-*, Return-Path) cannot be set.',
  })
  @IsOptional()
  @IsObject()
  headers?: Record<string, string>;

  @ApiPropertyOptional({ type: [AttachmentDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => AttachmentDto)
  attachments?: AttachmentDto[];

  @ApiPropertyOptional({
    example: '2026-12-24T09:00:00Z',
    description: 'Deliver at this time (status `scheduled` until then). In the past: now. At most 30 days ahead.',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  scheduleFor?: string;

  @ApiPropertyOptional({ enum: PRIORITIES, default: 'normal', description: 'Queue priority.' })
  @IsOptional()
  @IsIn(PRIORITIES)
  priority?: MessagePriority;

  @ApiPropertyOptional({
    type: TrackingDto,
    description:
      'Open and click tracking, and unsubscribe links. Only `unsubscribe` (or a batch or list send) adds the List-Unsubscribe ' +
      'headers: tracking opens or clicks does not.',
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => TrackingDto)
  tracking?: TrackingDto;

  @ApiPropertyOptional({
    example: 'list_4fQ2mT0kLw2sZr8NcY1pXb',
    description:
      'Send to a mailing list instead of `to`: one message per subscribed, unsuppressed subscriber, rendered from ' +
      '`template` (or subject and html/text, as Handlebars) with the variables plus email, name, subscriber {email, name} ' +
      'and unsubscribeUrl. The answer is a list send (listSendId, queued); the messages are made in the background. cc, ' +
      'bcc and attachments are refused with a list.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  list?: string;

  @ApiPropertyOptional({
    example: { campaign: 'spring-sale' },
    description: 'Your own labels (at most 20, strings of up to 500 characters): returned in every webhook event of the message.',
  })
  @IsOptional()
  @IsStringMap(MESSAGE_METADATA_LIMITS)
  metadata?: Record<string, string>;
}
