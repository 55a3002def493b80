import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateIf,
  ValidationArguments,
} from 'class-validator';
import { PageQueryDto } from '../../common/http/page-query.dto';
import { DEFAULT_MAX_CONCURRENCY, MAX_MAX_CONCURRENCY, MAX_RATE_LIMIT_PER_SECOND } from '../webhook-endpoint-limits';
import { MAX_URL_LENGTH } from '../webhook-targets';
import { DELIVERY_STATUSES, type DeliveryStatus, type WebhookDelivery } from '../webhook-delivery.entity';
import type { WebhookAttempt } from '../webhook-attempt.entity';
import {
  WEBHOOK_DISABLED_REASONS,
  WEBHOOK_EVENT_TYPES,
  type Webhook,
  type WebhookDisabledReason,
  type WebhookEventType,
} from '../webhook.entity';

function unknownEventsMessage(args: ValidationArguments): string {
  const given: unknown[] = Array.isArray(args.value) ? args.value : [args.value];
  const unknown = given.filter((event) => !(WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(event));
  return `unknown event type ${unknown.map((event) => JSON.stringify(event)).join(', ')}: allowed are ${WEBHOOK_EVENT_TYPES.join(', ')}`;
}

const URL_PROPERTY = {
  example: 'https://example.com/hooks/mailroom',
  maxLength: MAX_URL_LENGTH,
  description:
    'http or https, without user:password. Unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is set, its host must resolve to public ' +
    'addresses only (no loopback, private, link-local or metadata addresses), at registration and at every delivery.',
};

const MAX_CONCURRENCY_PROPERTY = {
  minimum: 1,
  maximum: MAX_MAX_CONCURRENCY,
  default: DEFAULT_MAX_CONCURRENCY,
  example: DEFAULT_MAX_CONCURRENCY,
  description:
    'Requests this endpoint gets at once, across all workers, while its last attempt succeeded (one at a time before ' +
    'its first success and after a failure). Its other deliveries wait in its own queue, in order; other endpoints’ ' +
    'deliveries do not wait for them.',
};

const RATE_LIMIT_PROPERTY = {
  type: Number,
  nullable: true,
  minimum: 1,
  maximum: MAX_RATE_LIMIT_PER_SECOND,
  example: 10,
  description: 'Requests this endpoint gets per second (in any one-second window), across all workers; null: no limit.',
};

const EVENTS_PROPERTY = {
  enum: WEBHOOK_EVENT_TYPES,
  isArray: true,
  example: ['delivered', 'bounced'],
  description:
    'Event types to receive; duplicates are dropped. form.notification_failed: a form notification that did not reach ' +
    'the owner (reason suppressed: held on the submission and sent once the suppression is lifted; bounced; failed), ' +
    'with formId, formName, submissionId, recipient, messageId and detail. failed: the message (or one recipient of it) ' +
    'will not be delivered: refused for good, given up after its attempts, or every recipient suppressed; deferred: a ' +
    'temporary failure, tried again later, with `nextAttemptAt` (null when unknown); both with `attempts` (delivery ' +
    'attempts made so far) and `detail` (the SMTP answer, or why).',
};

export class CreateWebhookDto {
  @ApiProperty(URL_PROPERTY)
  @IsString()
  @MaxLength(MAX_URL_LENGTH)
  url: string;

  @ApiProperty(EVENTS_PROPERTY)
  @IsArray()
  @ArrayNotEmpty({ message: 'events must name at least one event type' })
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length * 4)
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true, message: unknownEventsMessage })
  events: WebhookEventType[];

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500, example: 'Delivery events for the CRM' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({ default: true, description: 'A disabled webhook receives nothing; its pending deliveries fail.' })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional(MAX_CONCURRENCY_PROPERTY)
  @ValidateIf((_, value) => value !== undefined)
  @IsInt()
  @Min(1)
  @Max(MAX_MAX_CONCURRENCY)
  maxConcurrency?: number;

  @ApiPropertyOptional(RATE_LIMIT_PROPERTY)
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_RATE_LIMIT_PER_SECOND)
  rateLimitPerSecond?: number | null;
}

/** PATCH: the fields given replace the stored ones; `description: null` removes it. */
export class UpdateWebhookDto {
  @ApiPropertyOptional(URL_PROPERTY)
  @ValidateIf((_, value) => value !== undefined)
  @IsString()
  @MaxLength(MAX_URL_LENGTH)
  url?: string;

  @ApiPropertyOptional(EVENTS_PROPERTY)
  @ValidateIf((_, value) => value !== undefined)
  @IsArray()
  @ArrayNotEmpty({ message: 'events must name at least one event type' })
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length * 4)
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true, message: unknownEventsMessage })
  events?: WebhookEventType[];

  @ApiPropertyOptional({ example: 'Delivery events for the CRM', type: String, nullable: true, maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional()
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional(MAX_CONCURRENCY_PROPERTY)
  @ValidateIf((_, value) => value !== undefined)
  @IsInt()
  @Min(1)
  @Max(MAX_MAX_CONCURRENCY)
  maxConcurrency?: number;

  @ApiPropertyOptional(RATE_LIMIT_PROPERTY)
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_RATE_LIMIT_PER_SECOND)
  rateLimitPerSecond?: number | null;
}

export class WebhookDto {
  @ApiProperty({ example: 'whk_4fQ2mT0kLw2sZr8NcY1pXb' })
  id: string;

  @ApiProperty({ example: 'https://example.com/hooks/mailroom' })
  url: string;

  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true })
  events: WebhookEventType[];

  @ApiProperty({ example: 'Delivery events for the CRM', type: String, nullable: true })
  description: string | null;

  @ApiProperty()
  enabled: boolean;

  @ApiProperty({
    enum: WEBHOOK_DISABLED_REASONS,
    nullable: true,
    description:
      'Why it is disabled: `gone` (it answered 410 Gone), `failing` (every attempt failed for WEBHOOK_DISABLE_AFTER_FAILING_MS, ' +
      '5 days by default), `manual` (through this API); null while enabled. Enabling it again clears this and failingSince.',
  })
  disabledReason: WebhookDisabledReason | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When it was disabled; null while enabled' })
  disabledAt: string | null;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'The first failed attempt since the last successful one; null while the last attempt succeeded',
  })
  failingSince: string | null;

  @ApiProperty(MAX_CONCURRENCY_PROPERTY)
  maxConcurrency: number;

  @ApiProperty(RATE_LIMIT_PROPERTY)
  rateLimitPerSecond: number | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  static readonly from = (webhook: Webhook): WebhookDto => {
    return {
      id: webhook.id,
      url: webhook.url,
      events: webhook.events,
      description: webhook.description,
      enabled: webhook.enabled,
      disabledReason: webhook.disabledReason,
      disabledAt: webhook.disabledAt?.toISOString() ?? null,
      failingSince: webhook.failingSince?.toISOString() ?? null,
      maxConcurrency: webhook.maxConcurrency,
      rateLimitPerSecond: webhook.rateLimitPerSecond,
      createdAt: webhook.createdAt.toISOString(),
      updatedAt: webhook.updatedAt.toISOString(),
    };
  };
}

const SECRET_PROPERTY = {
  example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  description:
    'Signs every delivery (Standard Webhooks: verify with its libraries, e.g. `new Webhook(secret).verify(body, headers)`). ' +
    'Shown only now: store it.',
};

export class CreatedWebhookDto extends WebhookDto {
  @ApiProperty(SECRET_PROPERTY)
  secret: string;
}

export class WebhookListDto {
  @ApiProperty({ type: [WebhookDto], description: 'Oldest first' })
  webhooks: WebhookDto[];
}

export class RotatedSecretDto {
  @ApiProperty({ example: 'whk_4fQ2mT0kLw2sZr8NcY1pXb' })
  id: string;

  @ApiProperty(SECRET_PROPERTY)
  secret: string;

  @ApiProperty({ format: 'date-time', description: 'Until then the old secret signs too: `webhook-signature` carries both signatures.' })
  previousSecretExpiresAt: string;
}

export class ListDeliveriesQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES, description: 'Only deliveries in this state' })
  @IsOptional()
  @IsIn(DELIVERY_STATUSES, { message: `status must be one of ${DELIVERY_STATUSES.join(', ')}` })
  status?: DeliveryStatus;
}

export class WebhookAttemptDto {
  @ApiProperty({ example: 1, description: '1, 2, …; replays continue the count' })
  attempt: number;

  @ApiProperty({ format: 'date-time' })
  startedAt: string;

  @ApiProperty({ example: 84 })
  durationMs: number;

  @ApiProperty({ type: Number, nullable: true, example: 200, description: 'The receiver’s HTTP status; null when none came' })
  statusCode: number | null;

  @ApiProperty({ type: String, nullable: true, example: 'HTTP 500', description: 'Why the attempt failed' })
  error: string | null;

  @ApiProperty({
    example: '{"error":"database unavailable"}',
    type: String,
    nullable: true,
    description: 'The start of the receiver’s answer (at most 1 KB)',
  })
  response: string | null;

  @ApiProperty()
  succeeded: boolean;

  static readonly from = (attempt: WebhookAttempt): WebhookAttemptDto => {
    return {
      attempt: attempt.attempt,
      startedAt: attempt.startedAt.toISOString(),
      durationMs: attempt.durationMs,
      statusCode: attempt.statusCode,
      error: attempt.error,
      response: attempt.response,
      succeeded: attempt.succeeded,
    };
  };
}

export class WebhookDeliveryDto {
  @ApiProperty({ example: 'whd_8Jk2mT0kLw2sZr8NcY1pXb' })
  id: string;

  @ApiProperty({
    example: 'evt_2Lq9mT0kLw2sZr8NcY1pXb',
    description: 'The `webhook-id` header and the body’s `id`: the same at every retry and replay',
  })
  eventId: string;

  @ApiProperty({ example: 'delivered' })
  eventType: string;

  @ApiProperty({ enum: DELIVERY_STATUSES })
  status: DeliveryStatus;

  @ApiProperty({ type: [WebhookAttemptDto], description: 'Oldest first' })
  attempts: WebhookAttemptDto[];

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When the next attempt is due; null once succeeded or failed',
  })
  nextAttemptAt: string | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({
    example: {
      type: 'delivered',
      messageId: 'msg_2Vh7Qm9LrX4tKp1Zb8Ns3W',
      recipient: 'ada@example.org',
      timestamp: '2026-06-09T10:00:00.000Z',
      metadata: {},
      detail: null,
      machine: false,
    },
    type: 'object',
    additionalProperties: true,
    description: 'The event as delivered (the body without its id)',
  })
  payload: Record<string, unknown>;

  static from(delivery: WebhookDelivery, attempts: WebhookAttempt[]): WebhookDeliveryDto {
    return {
      id: delivery.id,
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      status: delivery.status,
      attempts: attempts.map(WebhookAttemptDto.from),
      nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
      createdAt: delivery.createdAt.toISOString(),
      payload: delivery.payload,
    };
  }
}

export class WebhookDeliveryListDto {
  @ApiProperty({ type: [WebhookDeliveryDto], description: 'Newest first' })
  deliveries: WebhookDeliveryDto[];

  @ApiProperty({
    example: 'WyIyMDI2LTA2LTA5VDEwOjAwOjAwLjAwMFoiLCJ3aGRfMSJd',
    type: String,
    nullable: true,
    description: 'Pass as cursor for the next page; null on the last page',
  })
  nextCursor: string | null;
}
