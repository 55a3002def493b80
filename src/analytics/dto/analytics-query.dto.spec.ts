import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { AnalyticsQueryDto, EmailAnalyticsQueryDto } from './analytics-query.dto';

/** The messages per field, as the validation pipe reports them. */
function problems(cls: typeof EmailAnalyticsQueryDto | typeof AnalyticsQueryDto, query: Record<string, unknown>): Record<string, string[]> {
  const errors = validateSync(plainToInstance(cls, query), { whitelist: true, forbidNonWhitelisted: true });
  return Object.fromEntries(errors.map((e) => [e.property, Object.values(e.constraints ?? {})]));
}

describe('EmailAnalyticsQueryDto', () => {
  it('takes nothing, a period, or from and to', () => {
    expect(problems(EmailAnalyticsQueryDto, {})).toEqual({});
    for (const period of ['last_24_hours', 'last_7_days', 'last_30_days', 'last_90_days'])
      expect(problems(EmailAnalyticsQueryDto, { period })).toEqual({});
    expect(problems(EmailAnalyticsQueryDto, { from: '2026-11-01', to: '2026-11-08T12:00:00Z' })).toEqual({});
  });

  it('refuses an unknown period, listing the accepted ones', () => {
    expect(problems(EmailAnalyticsQueryDto, { period: 'last_week' })).toEqual({
      period: ['period must be one of last_24_hours, last_7_days, last_30_days, last_90_days (or give from and to)'],
    });
    // The aliases belong to /analytics only.
    expect(Object.keys(problems(EmailAnalyticsQueryDto, { period: '7d' }))).toEqual(['period']);
    expect(Object.keys(problems(EmailAnalyticsQueryDto, { period: ['last_7_days', 'last_30_days'] }))).toEqual(['period']);
  });

  it('wants from and to together, not with a period', () => {
    expect(problems(EmailAnalyticsQueryDto, { from: '2026-11-01' })).toEqual({ to: ['to is required with from'] });
    expect(problems(EmailAnalyticsQueryDto, { to: '2026-11-01' })).toEqual({ from: ['from is required with to'] });
    expect(problems(EmailAnalyticsQueryDto, { period: 'last_7_days', from: '2026-11-01', to: '2026-11-02' })).toEqual({
      period: ['period cannot be combined with from and to'],
    });
  });

  it('wants ISO 8601 instants, to later than from, at most 366 days apart', () => {
    expect(problems(EmailAnalyticsQueryDto, { from: 'yesterday', to: '2026-02-30' })).toEqual({
      from: ['from must be an ISO 8601 date or date-time (2026-11-01 or 2026-11-01T09:00:00Z)'],
      to: ['to must be an ISO 8601 date or date-time (2026-11-01 or 2026-11-01T09:00:00Z)'],
    });
    const order = ['to must be later than from, and at most 366 days after it'];
    expect(problems(EmailAnalyticsQueryDto, { from: '2026-11-02', to: '2026-11-01' })).toEqual({ to: order });
    expect(problems(EmailAnalyticsQueryDto, { from: '2026-11-01T10:00:00Z', to: '2026-11-01T10:00:00Z' })).toEqual({ to: order });
    expect(problems(EmailAnalyticsQueryDto, { from: '2026-01-01', to: '2027-01-02' })).toEqual({});
    expect(problems(EmailAnalyticsQueryDto, { from: '2026-01-01', to: '2027-01-02T00:00:01Z' })).toEqual({ to: order });
  });

  it('refuses unknown parameters', () => {
    expect(Object.keys(problems(EmailAnalyticsQueryDto, { range: '7d' }))).toEqual(['range']);
  });
});

describe('AnalyticsQueryDto', () => {
  it('takes the periods and their short names', () => {
    for (const range of ['last_24_hours', 'last_7_days', 'last_30_days', 'last_90_days', '24h', '7d', '30d', '90d']) {
      expect(problems(AnalyticsQueryDto, { range })).toEqual({});
    }
  });

  it('refuses another range, listing the accepted values', () => {
    expect(problems(AnalyticsQueryDto, { range: '1y' })).toEqual({
      range: ['range must be one of last_24_hours, last_7_days, last_30_days, last_90_days, 24h, 7d, 30d, 90d (or give from and to)'],
    });
    expect(problems(AnalyticsQueryDto, { range: '7d', from: '2026-11-01', to: '2026-11-02' })).toEqual({
      range: ['range cannot be combined with from and to'],
    });
  });
});
