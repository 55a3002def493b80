import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { buildMessage, IsOptional, isISO8601, ValidateBy } from 'class-validator';

/** A date-time that names its offset (`Z` or `±hh:mm`): one without would be read in the server's zone. */
const WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/** An ISO 8601 date-time (strict: a real calendar date) with its offset. */
function IsInstant(): PropertyDecorator {
  return ValidateBy({
    name: 'isInstant',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && isISO8601(value, { strict: true }) && WITH_OFFSET.test(value),
      defaultMessage: buildMessage((each) => `${each}$property must be an ISO 8601 date-time with its offset (Z or ±hh:mm)`),
    },
  });
}

export class RecoverDeliveriesDto {
  @ApiProperty({
    example: '2026-06-09T08:00:00Z',
    description: 'Replay the failed deliveries of events from this instant on (with its offset: Z or ±hh:mm)',
  })
  @IsInstant()
  since: string;

  @ApiPropertyOptional({
    example: '2026-06-09T12:00:00Z',
    description: 'Up to this instant (excluded, with its offset); now when left out',
  })
  @IsOptional()
  @IsInstant()
  until?: string;
}

export class RecoveredDeliveriesDto {
  @ApiProperty({ example: 42, description: 'Failed deliveries queued again, each with the whole retry schedule' })
  queued: number;

  @ApiProperty({
    example: false,
    description:
      'More failed deliveries are left in the window (at most 1000 are queued per call): call again with the same since and until',
  })
  more: boolean;

  @ApiProperty({ format: 'date-time', example: '2026-06-09T08:00:00.000Z' })
  since: string;

  @ApiProperty({ format: 'date-time', example: '2026-06-09T12:00:00.000Z', description: 'The until given, or the time of the call' })
  until: string;
}

/** The start of an event as webhooks get it; the fields of its type follow. */
export class WebhookEventDto {
  @ApiProperty({ example: 'evt_2Lq9mT0kLw2sZr8NcY1pXb', description: 'The `webhook-id` of its deliveries' })
  id: string;

  @ApiProperty({ example: 'form.submission' })
  type: string;

  @ApiProperty({ format: 'date-time', example: '2026-06-09T10:00:00.000Z' })
  timestamp: string;
}
