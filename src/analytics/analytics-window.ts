/**
 * The time windows analytics answers for, as pure functions (tested without a database). The finest rollup is an
 * hour (UTC), so every window is a run of whole hours: `from` inclusive, `to` exclusive, both on the hour.
 */

export const PERIODS = ['last_24_hours', 'last_7_days', 'last_30_days', 'last_90_days'] as const;
export type Period = (typeof PERIODS)[number];

export const DEFAULT_PERIOD: Period = 'last_30_days';

/** Short names GET /analytics also takes for `range`. */
export const RANGE_ALIASES: Readonly<Record<string, Period>> = {
  '24h': 'last_24_hours',
  '7d': 'last_7_days',
  '30d': 'last_30_days',
  '90d': 'last_90_days',
};

/** Every value `range` takes. */
export const RANGES: readonly string[] = [...PERIODS, ...Object.keys(RANGE_ALIASES)];

/** The longest from/to window, in days (after alignment to whole hours). */
export const MAX_WINDOW_DAYS = 366;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export interface AnalyticsWindow {
  /** The period asked for, or `custom` for from/to. */
  name: Period | 'custom';
  /** Start of the first hour counted. */
  from: Date;
  /** End of the last hour counted (exclusive). */
  to: Date;
}

export const floorHour = (at: Date): Date => new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS);
export const ceilHour = (at: Date): Date => new Date(Math.ceil(at.getTime() / HOUR_MS) * HOUR_MS);
const floorDay = (at: Date): Date => new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);

/** A period name or a range alias as its period; undefined for anything else. */
export function periodOf(name: string): Period | undefined {
  if ((PERIODS as readonly string[]).includes(name)) return name as Period;
  return Object.hasOwn(RANGE_ALIASES, name) ? RANGE_ALIASES[name] : undefined;
}

/**
 * A named period up to the end of the current hour. `last_24_hours`: the 24 hourly buckets ending with the
 * current one. `last_N_days`: today (UTC, so far) and the N − 1 days before, from midnight UTC: N calendar days,
 * as the daily series shows them.
 */
export function periodWindow(period: Period, now: Date): AnalyticsWindow {
  const to = new Date(floorHour(now).getTime() + HOUR_MS);
  if (period === 'last_24_hours') return { name: period, from: new Date(to.getTime() - 24 * HOUR_MS), to };
  const days = { last_7_days: 7, last_30_days: 30, last_90_days: 90 }[period];
  return { name: period, from: new Date(floorDay(now).getTime() - (days - 1) * DAY_MS), to };
}

/**
 * A window as the rollups hold it: the whole UTC days inside it from the daily rollup, the hours at either end
 * from the hourly one. Every hour of the window is in exactly one part.
 */
export interface WindowSpans {
  /** The whole days, [firstDay, endDay) as YYYY-MM-DD; equal when there is none. */
  firstDay: string;
  endDay: string;
  /** The hours before the first whole day: [from, headEnd). */
  headEnd: Date;
  /** The hours after the last whole day: [tailStart, to). */
  tailStart: Date;
}

const dateOf = (at: Date) => at.toISOString().slice(0, 10);

export function spansOf(window: AnalyticsWindow): WindowSpans {
  const firstDay = new Date(Math.ceil(window.from.getTime() / DAY_MS) * DAY_MS);
  const endDay = floorDay(window.to);
  if (firstDay < endDay) return { firstDay: dateOf(firstDay), endDay: dateOf(endDay), headEnd: firstDay, tailStart: endDay };
  // No whole day: every hour is read from the hourly rollup.
  return { firstDay: dateOf(firstDay), endDay: dateOf(firstDay), headEnd: window.to, tailStart: window.to };
}

/** from/to as given, widened to whole hours: the hour holding `from` through the hour holding the instant before `to`. */
export function customWindow(from: Date, to: Date): AnalyticsWindow {
  return { name: 'custom', from: floorHour(from), to: ceilHour(to) };
}

const INSTANT = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * An ISO 8601 date (`2026-11-01`, midnight UTC) or date-time (`2026-11-01T10:00:00Z`, an offset, or none: UTC);
 * null when it is not one, or names no real day or time (`2026-02-30`).
 */
export function parseInstant(text: string): Date | null {
  const match = INSTANT.exec(text);
  if (!match) return null;
  const withZone = text.includes('T') && match[1] === undefined ? `${text}Z` : text;
  const at = new Date(withZone);
  if (Number.isNaN(at.getTime())) return null;
  // Date rolls 2026-02-30 over to March: the day must survive the round trip.
  const [year, month, day] = text.slice(0, 10).split('-').map(Number);
  const check = new Date(Date.UTC(year, month - 1, day));
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null;
  return at;
}

/** Days between the aligned ends of from/to (what MAX_WINDOW_DAYS limits). */
export function windowDays(from: Date, to: Date): number {
  const window = customWindow(from, to);
  return (window.to.getTime() - window.from.getTime()) / DAY_MS;
}

/** Every UTC date the window touches, oldest first, as YYYY-MM-DD: the daily series' rows. */
export function datesOf(window: AnalyticsWindow): string[] {
  const dates: string[] = [];
  const last = window.to.getTime() - 1;
  for (let day = floorDay(window.from).getTime(); day <= last; day += DAY_MS) dates.push(new Date(day).toISOString().slice(0, 10));
  return dates;
}

/** `part` as a percentage of `whole`, rounded to 2 decimals (half up); 0 when `whole` is 0, never NaN. */
export function percent(part: number, whole: number): number {
  if (whole <= 0) return 0;
  return Math.round((part * 10_000) / whole) / 100;
}
