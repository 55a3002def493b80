import { customWindow, datesOf, parseInstant, percent, periodOf, periodWindow, spansOf, windowDays } from './analytics-window';

const at = (iso: string) => new Date(iso);
const iso = (w: { from: Date; to: Date }) => [w.from.toISOString(), w.to.toISOString()];

describe('periodWindow', () => {
  const now = at('2026-11-23T14:37:12.345Z');

  it('last_24_hours is the 24 hourly buckets ending with the current one', () => {
    expect(iso(periodWindow('last_24_hours', now))).toEqual(['2026-11-22T15:00:00.000Z', '2026-11-23T15:00:00.000Z']);
  });

  it('last_N_days is today so far and the N − 1 days before, from midnight UTC', () => {
    expect(iso(periodWindow('last_7_days', now))).toEqual(['2026-11-17T00:00:00.000Z', '2026-11-23T15:00:00.000Z']);
    expect(iso(periodWindow('last_30_days', now))).toEqual(['2026-10-25T00:00:00.000Z', '2026-11-23T15:00:00.000Z']);
    expect(iso(periodWindow('last_90_days', now))).toEqual(['2026-08-26T00:00:00.000Z', '2026-11-23T15:00:00.000Z']);
  });

  it('on the hour, the current hour is the one starting now', () => {
    expect(iso(periodWindow('last_24_hours', at('2026-11-23T00:00:00Z')))).toEqual([
      '2026-11-22T01:00:00.000Z',
      '2026-11-23T01:00:00.000Z',
    ]);
    expect(iso(periodWindow('last_7_days', at('2026-11-23T23:59:59.999Z')))).toEqual([
      '2026-11-17T00:00:00.000Z',
      '2026-11-24T00:00:00.000Z',
    ]);
  });

  it('names the window after the period', () => {
    expect(periodWindow('last_7_days', now).name).toBe('last_7_days');
  });
});

describe('periodOf', () => {
  it('takes period names and the short aliases, nothing else', () => {
    expect(periodOf('last_90_days')).toBe('last_90_days');
    expect(periodOf('24h')).toBe('last_24_hours');
    expect(periodOf('7d')).toBe('last_7_days');
    expect(periodOf('30d')).toBe('last_30_days');
    expect(periodOf('90d')).toBe('last_90_days');
    for (const bad of ['last_week', '1d', 'LAST_7_DAYS', 'toString', 'constructor', '']) expect(periodOf(bad)).toBeUndefined();
  });
});

describe('customWindow', () => {
  it('widens to whole hours: the hour holding from through the hour holding the instant before to', () => {
    expect(iso(customWindow(at('2026-11-01T10:15:00Z'), at('2026-11-01T12:00:00Z')))).toEqual([
      '2026-11-01T10:00:00.000Z',
      '2026-11-01T12:00:00.000Z',
    ]);
    expect(iso(customWindow(at('2026-11-01T10:00:00Z'), at('2026-11-01T12:00:00.001Z')))).toEqual([
      '2026-11-01T10:00:00.000Z',
      '2026-11-01T13:00:00.000Z',
    ]);
    expect(customWindow(at('2026-11-01T10:00:00Z'), at('2026-11-02T00:00:00Z')).name).toBe('custom');
  });
});

describe('windowDays', () => {
  it('measures the aligned window', () => {
    expect(windowDays(at('2026-01-01T00:00:00Z'), at('2027-01-02T00:00:00Z'))).toBe(366);
    expect(windowDays(at('2026-01-01T00:30:00Z'), at('2027-01-02T00:00:00Z'))).toBe(366);
    expect(windowDays(at('2026-01-01T00:00:00Z'), at('2027-01-02T00:00:01Z'))).toBeGreaterThan(366);
  });
});

describe('parseInstant', () => {
  it('reads dates as midnight UTC, date-times with Z, an offset or none (UTC)', () => {
    expect(parseInstant('2026-11-01')?.toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(parseInstant('2026-11-01T10:30:00Z')?.toISOString()).toBe('2026-11-01T10:30:00.000Z');
    expect(parseInstant('2026-11-01T10:30:00.250+02:00')?.toISOString()).toBe('2026-11-01T08:30:00.250Z');
    expect(parseInstant('2026-11-01T10:30')?.toISOString()).toBe('2026-11-01T10:30:00.000Z');
  });

  it('refuses what is not an ISO 8601 date or date-time, or names no real day', () => {
    for (const bad of [
      'yesterday',
      '2026-11-1',
      '2026-02-30',
      '2026-13-01',
      '2026-11-01T25:00Z',
      '2026-11-01 10:00',
      '1700000000',
      '2026-W47',
      '2026-11-01T10:00+0200',
      ' 2026-11-01',
    ]) {
      expect([bad, parseInstant(bad)]).toEqual([bad, null]);
    }
  });
});

describe('datesOf', () => {
  it('lists every UTC date the window touches', () => {
    expect(datesOf({ name: 'custom', from: at('2026-01-01T00:00:00Z'), to: at('2026-01-04T00:00:00Z') })).toEqual([
      '2026-01-01',
      '2026-01-02',
      '2026-01-03',
    ]);
    expect(datesOf({ name: 'custom', from: at('2026-01-01T23:00:00Z'), to: at('2026-01-02T01:00:00Z') })).toEqual([
      '2026-01-01',
      '2026-01-02',
    ]);
    expect(datesOf({ name: 'custom', from: at('2026-02-28T05:00:00Z'), to: at('2026-02-28T06:00:00Z') })).toEqual(['2026-02-28']);
  });

  it('has N dates for last_N_days, today last', () => {
    const now = at('2026-11-23T14:37:12Z');
    for (const [period, n] of [
      ['last_7_days', 7],
      ['last_30_days', 30],
      ['last_90_days', 90],
    ] as const) {
      const dates = datesOf(periodWindow(period, now));
      expect(dates).toHaveLength(n);
      expect(dates[n - 1]).toBe('2026-11-23');
    }
    expect(datesOf(periodWindow('last_24_hours', now))).toEqual(['2026-11-22', '2026-11-23']);
    expect(datesOf(periodWindow('last_24_hours', at('2026-11-23T23:10:00Z')))).toEqual(['2026-11-23']);
  });
});

describe('percent', () => {
  it('is 0 when nothing was sent, never NaN or Infinity', () => {
    expect(percent(0, 0)).toBe(0);
    expect(percent(5, 0)).toBe(0);
  });

  it('rounds to 2 decimals, half up', () => {
    expect(percent(1, 3)).toBe(33.33);
    expect(percent(2, 3)).toBe(66.67);
    expect(percent(1, 32)).toBe(3.13); // 3.125
    expect(percent(1, 8)).toBe(12.5);
    expect(percent(7, 7)).toBe(100);
    expect(percent(1, 1_000_000)).toBe(0);
    expect(percent(5, 1_000_000)).toBe(0); // 0.0005
    expect(percent(50, 1_000_000)).toBe(0.01); // 0.005
    expect(percent(999_999, 1_000_000)).toBe(100);
  });

  it('shows more than 100 when the events say so (a provider reporting a delivery twice)', () => {
    expect(percent(3, 2)).toBe(150);
  });
});

describe('spansOf', () => {
  const spans = (from: string, to: string) => {
    const s = spansOf({ name: 'custom', from: at(from), to: at(to) });
    return { days: [s.firstDay, s.endDay], head: [from, s.headEnd.toISOString()], tail: [s.tailStart.toISOString(), to] };
  };

  it('reads whole days from the daily rollup and the hours at either end from the hourly one', () => {
    expect(spans('2026-11-01T10:00:00.000Z', '2026-11-04T05:00:00.000Z')).toEqual({
      days: ['2026-11-02', '2026-11-04'],
      head: ['2026-11-01T10:00:00.000Z', '2026-11-02T00:00:00.000Z'],
      tail: ['2026-11-04T00:00:00.000Z', '2026-11-04T05:00:00.000Z'],
    });
  });

  it('has empty ends when the window starts or ends at midnight', () => {
    expect(spans('2026-11-01T00:00:00.000Z', '2026-11-04T00:00:00.000Z')).toEqual({
      days: ['2026-11-01', '2026-11-04'],
      head: ['2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z'],
      tail: ['2026-11-04T00:00:00.000Z', '2026-11-04T00:00:00.000Z'],
    });
  });

  it('reads only hours when no whole day is inside', () => {
    for (const [from, to] of [
      ['2026-11-01T10:00:00.000Z', '2026-11-02T09:00:00.000Z'],
      ['2026-11-01T10:00:00.000Z', '2026-11-01T11:00:00.000Z'],
      ['2026-11-01T00:00:00.000Z', '2026-11-01T23:00:00.000Z'],
    ]) {
      const s = spansOf({ name: 'custom', from: at(from), to: at(to) });
      expect(s.firstDay).toBe(s.endDay);
      expect([s.headEnd.toISOString(), s.tailStart.toISOString()]).toEqual([to, to]);
    }
  });

  it('gives last_N_days its N − 1 whole days and today’s hours', () => {
    const s = spansOf(periodWindow('last_7_days', at('2026-11-23T14:37:00Z')));
    expect([s.firstDay, s.endDay, s.headEnd.toISOString(), s.tailStart.toISOString()]).toEqual([
      '2026-11-17',
      '2026-11-23',
      '2026-11-17T00:00:00.000Z',
      '2026-11-23T00:00:00.000Z',
    ]);
  });
});
