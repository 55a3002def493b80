import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsObject, IsOptional, Max, Min, ValidateNested } from 'class-validator';
import { MAX_QUOTA_VALUE } from '../../quotas/quota-policy';

const UNITS = 'Each accepted email recipient and each accepted form submission counts one (forwarded mail does not)';

function limitDoc(window: string) {
  return {
    type: Number,
    nullable: true,
    minimum: 1,
    maximum: MAX_QUOTA_VALUE,
    description: `${UNITS}, per UTC ${window}. null removes the limit; leaving the field out keeps it.`,
  } as const;
}

/** PATCH /settings: global_limits fields to set (a positive integer) or remove (null). */
export class GlobalLimitsPatchDto {
  @ApiPropertyOptional({ ...limitDoc('hour'), example: 1000 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  hourly?: number | null;

  @ApiPropertyOptional({ ...limitDoc('day'), example: 10_000 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  daily?: number | null;

  @ApiPropertyOptional({ ...limitDoc('calendar month'), example: 100_000 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  monthly?: number | null;
}

export class UpdateAccountSettingsDto {
  @ApiPropertyOptional({
    type: GlobalLimitsPatchDto,
    nullable: true,
    description:
      'Account-wide caps on emails and form submissions together (forwarded mail is not counted), per UTC hour, day and month; past one, sends and form posts get 429 ACCOUNT_QUOTA_EXCEEDED. null removes all three.',
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => GlobalLimitsPatchDto)
  global_limits?: GlobalLimitsPatchDto | null;
}

export class GlobalLimitsDto {
  @ApiProperty({ type: Number, nullable: true, example: 1000, description: 'Per UTC hour; null: no limit' })
  hourly: number | null;

  @ApiProperty({ type: Number, nullable: true, example: null, description: 'Per UTC day; null: no limit' })
  daily: number | null;

  @ApiProperty({ type: Number, nullable: true, example: 100_000, description: 'Per UTC calendar month; null: no limit' })
  monthly: number | null;
}

/** One quota as it stands now. */
export class QuotaStandingDto {
  @ApiProperty({ type: Number, nullable: true, example: 180, description: 'null: no limit (usage is still counted)' })
  limit: number | null;

  @ApiProperty({ example: 42, description: 'Used in the current window (accepted, also usage reported through the billing API)' })
  used: number;

  @ApiProperty({ type: Number, nullable: true, example: 138, description: 'What an acceptance may still take; null: no limit' })
  remaining: number | null;

  @ApiProperty({
    example: '2026-12-01T00:00:00.000Z',
    description: 'When the window ends and the quota is whole again (UTC calendar windows)',
  })
  reset_time: string;
}

export class AccountQuotasDto {
  @ApiProperty({
    type: QuotaStandingDto,
    description:
      'Emails (one per accepted recipient) per calendar month: Free 180 (360 in the month the account was created); paid plans have no stop (overage is billed); enterprise as set by the operator. Past it: QUOTA_EXCEEDED.',
  })
  emails_per_month: QuotaStandingDto;

  @ApiProperty({
    type: QuotaStandingDto,
    description:
      'Forwarded emails (one per destination a received message is forwarded to, bounces returned to their senders included) ' +
      'per calendar month: Free 500, Pro 50000; enterprise as set by the operator. Counted apart from emails_per_month and ' +
      'global_limits, and not billed. Past it, the inbound SMTP server answers 451 4.7.1 and the sending server tries again later.',
  })
  forwards_per_month: QuotaStandingDto;

  @ApiProperty({
    type: QuotaStandingDto,
    description: 'Accepted form submissions (spam not counted) per UTC hour: Free 100, Pro 2000. Past it: QUOTA_EXCEEDED.',
  })
  form_submissions_per_hour: QuotaStandingDto;

  @ApiProperty({
    type: QuotaStandingDto,
    description: 'Accepted form submissions per UTC day: Free 1000, Pro 20000. Past it: QUOTA_EXCEEDED.',
  })
  form_submissions_per_day: QuotaStandingDto;

  @ApiProperty({
    type: QuotaStandingDto,
    description:
      'global_limits.hourly: emails and form submissions together (forwarded mail not included). Past it: ACCOUNT_QUOTA_EXCEEDED.',
  })
  global_hourly: QuotaStandingDto;

  @ApiProperty({ type: QuotaStandingDto, description: 'global_limits.daily. Past it: ACCOUNT_QUOTA_EXCEEDED.' })
  global_daily: QuotaStandingDto;

  @ApiProperty({ type: QuotaStandingDto, description: 'global_limits.monthly. Past it: ACCOUNT_QUOTA_EXCEEDED.' })
  global_monthly: QuotaStandingDto;
}

const KEPT = 'null: kept forever. Set by the operator for the whole installation';

/** How long this installation keeps what grows with use (the RETENTION_*_DAYS settings). */
export class RetentionSettingsDto {
  @ApiProperty({
    type: Number,
    nullable: true,
    example: 30,
    description: `Days a message keeps its body (text, HTML, custom headers, attachments) after its last move to a final status (sent, delivered, bounced, failed, cancelled); its status, events and envelope are kept. ${KEPT} (RETENTION_MESSAGE_CONTENT_DAYS).`,
  })
  message_content_days: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 7,
    description: `Days a received message keeps its raw bytes once every message forwarding it is final. ${KEPT} (RETENTION_INBOUND_MESSAGES_DAYS).`,
  })
  inbound_messages_days: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 7,
    description: `Days a webhook event stays in the event outbox once published (each delivery keeps its own copy). ${KEPT} (RETENTION_OUTBOX_EVENTS_DAYS).`,
  })
  outbox_events_days: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 30,
    description: `Days a finished webhook delivery (succeeded or failed) and its attempts stay in the delivery log. ${KEPT} (RETENTION_WEBHOOK_DELIVERIES_DAYS).`,
  })
  webhook_deliveries_days: number | null;
}

/** GET and PATCH /settings: the account's own settings, and every quota with its current usage. */
export class AccountSettingsDto {
  @ApiProperty({ enum: ['free', 'pro', 'enterprise'], example: 'free' })
  tier: string;

  @ApiProperty({ example: true, description: 'Whether this installation enforces quotas (QUOTAS_ENABLED); usage is counted either way' })
  quotas_enforced: boolean;

  @ApiProperty({ type: GlobalLimitsDto })
  global_limits: GlobalLimitsDto;

  @ApiProperty({ type: AccountQuotasDto })
  quotas: AccountQuotasDto;

  @ApiProperty({ type: RetentionSettingsDto, description: 'How long stored mail, events and delivery logs are kept' })
  retention: RetentionSettingsDto;
}
