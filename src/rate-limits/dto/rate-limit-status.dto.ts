import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { LimitState } from '../rate-limit.types';

/** One limit as the spec's rate-limit status object shows it. */
export class LimitCounterDto {
  @ApiProperty({ example: 1000, nullable: true, type: Number, description: 'Requests allowed; null when nothing limits this window' })
  limit: number | null;

  @ApiProperty({ example: 997, nullable: true, type: Number })
  remaining: number | null;

  @ApiProperty({
    example: '2026-11-22T06:00:00.000Z',
    nullable: true,
    type: String,
    description: 'When the full limit is available again (the window has slid past every counted request)',
  })
  reset_time: string | null;

  static from(state: LimitState | null): LimitCounterDto {
    if (!state) return { limit: null, remaining: null, reset_time: null };
    return { limit: state.rule.limit, remaining: state.remaining, reset_time: new Date(state.resetAtMs).toISOString() };
  }
}

export class RateLimitsObjectDto {
  @ApiProperty({
    type: LimitCounterDto,
    description: 'The tighter of the key’s and the account’s hourly limits (a key whose rateLimit is null has none of its own)',
  })
  requests_per_hour: LimitCounterDto;

  @ApiProperty({ type: LimitCounterDto, description: 'The tighter of the key’s and the account’s per-minute limits' })
  requests_per_minute: LimitCounterDto;
}

/** GET /rate-limits (spec "Rate-limit status"). */
export class RateLimitsDto {
  @ApiProperty({ type: RateLimitsObjectDto })
  rate_limits: RateLimitsObjectDto;
}

export class LimitScopeStateDto extends LimitCounterDto {
  @ApiProperty({ enum: ['api-key', 'account', 'endpoint', 'ip'], description: 'Whose counter this is' })
  scope: string;

  @ApiProperty({ enum: ['hour', 'minute', 'burst'], description: 'hour and minute are sliding windows; burst a token bucket' })
  window: string;

  @ApiPropertyOptional({ example: '/domains', description: 'For endpoint limits: the route they count' })
  endpoint?: string;

  static fromState(state: LimitState): LimitScopeStateDto {
    const { scope, window, endpoint } = state.rule;
    return { ...LimitCounterDto.from(state), scope, window, ...(endpoint ? { endpoint } : {}) };
  }
}

export class PlanLimitsDto {
  @ApiPropertyOptional({ example: 1000 })
  requests_per_hour?: number;

  @ApiPropertyOptional({ example: 50 })
  requests_per_minute?: number;

  @ApiPropertyOptional({ example: 100, description: 'Token bucket capacity, refilled at requests_per_minute' })
  burst?: number;
}

/** GET /rate-limits/status: every limit that applies to the caller. */
export class RateLimitStatusDto {
  @ApiProperty({ enum: ['free', 'pro', 'enterprise'], example: 'free' })
  plan: string;

  @ApiProperty({ type: PlanLimitsDto, description: 'The account’s limits in force; a missing field is unlimited' })
  plan_limits: PlanLimitsDto;

  @ApiProperty({ example: false, description: 'The key is exempt from its own limits (restrictions.exempt)' })
  exempt: boolean;

  @ApiProperty({ example: 1, description: 'restrictions.multiplier applied to the key’s own limits' })
  multiplier: number;

  @ApiProperty({
    type: [LimitScopeStateDto],
    description: 'The key’s and the account’s limits; no api-key hour entry for a key without an hourly limit of its own (rateLimit null)',
  })
  scopes: LimitScopeStateDto[];

  @ApiProperty({ type: [LimitScopeStateDto], description: 'Per-endpoint limits, counted per account' })
  endpoints: LimitScopeStateDto[];
}
