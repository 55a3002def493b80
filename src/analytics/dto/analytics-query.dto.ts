import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsIn, IsOptional, ValidateIf } from 'class-validator';
import { DEFAULT_PERIOD, MAX_WINDOW_DAYS, PERIODS, type Period, RANGES } from '../analytics-window';
import { EndsAfter, IsInstant, NotWith } from './window-validators';

const givesWindow = (query: WindowQueryDto) => query.from !== undefined || query.to !== undefined;

const WINDOW_RULES =
  'Both or neither; instead of a named period. Whole UTC hours are counted: the hour holding `from` through the hour ' +
  `holding the instant before \`to\` (the answer shows them aligned). At most ${MAX_WINDOW_DAYS} days.`;

/** An explicit window: from and to together (ISO 8601), at most MAX_WINDOW_DAYS apart. */
export class WindowQueryDto {
  @ApiPropertyOptional({ example: '2026-11-01T00:00:00Z', description: `Start (inclusive). ${WINDOW_RULES}` })
  @ValidateIf(givesWindow)
  @IsDefined({ message: 'from is required with to' })
  @IsInstant()
  from?: string;

  @ApiPropertyOptional({ example: '2026-11-08T00:00:00Z', description: `End (exclusive). ${WINDOW_RULES}` })
  @ValidateIf(givesWindow)
  @IsDefined({ message: 'to is required with from' })
  @IsInstant()
  @EndsAfter('from', MAX_WINDOW_DAYS)
  to?: string;
}

const PERIOD_DESCRIPTION =
  '`last_24_hours`: the 24 hourly buckets ending with the current one. `last_N_days`: today (UTC, up to the end of ' +
  'the current hour) and the N − 1 days before it, from midnight UTC.';

export class EmailAnalyticsQueryDto extends WindowQueryDto {
  @ApiPropertyOptional({ enum: PERIODS, default: DEFAULT_PERIOD, description: PERIOD_DESCRIPTION })
  @IsOptional()
  @IsIn(PERIODS, { message: `period must be one of ${PERIODS.join(', ')} (or give from and to)` })
  @NotWith(['from', 'to'])
  period?: Period;
}

export class AnalyticsQueryDto extends WindowQueryDto {
  @ApiPropertyOptional({
    enum: RANGES,
    default: DEFAULT_PERIOD,
    description: `${PERIOD_DESCRIPTION} 24h, 7d, 30d and 90d are short names of the four.`,
  })
  @IsOptional()
  @IsIn(RANGES, { message: `range must be one of ${RANGES.join(', ')} (or give from and to)` })
  @NotWith(['from', 'to'])
  range?: string;
}
