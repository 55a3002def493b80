import type { DailyAnalyticsDto, EmailSummaryDto } from './dto/analytics.dto';
import { AnalyticsWindow, datesOf, percent } from './analytics-window';

/** Sums of email_stats_hourly columns over a window. */
export interface EmailCounts {
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  unsubscribed: number;
  opened: number;
  openedUnique: number;
  openedMachine: number;
  clicked: number;
  clickedUnique: number;
  clickedMachine: number;
}

export const NO_EMAIL: EmailCounts = {
  sent: 0,
  delivered: 0,
  bounced: 0,
  complained: 0,
  unsubscribed: 0,
  opened: 0,
  openedUnique: 0,
  openedMachine: 0,
  clicked: 0,
  clickedUnique: 0,
  clickedMachine: 0,
};

/** One UTC date's sums of every rollup. */
export interface DayCounts extends EmailCounts {
  date: string;
  submissions: number;
  spam: number;
  /** Messages received for forwarding (inbound_messages rows). */
  forwarded: number;
}

/** The email counts of a window from its days: the days hold every hour of the window, each once. */
export function sumDays(days: DayCounts[]): EmailCounts {
  const total = { ...NO_EMAIL };
  for (const day of days) for (const key of Object.keys(total) as (keyof EmailCounts)[]) total[key] += day[key];
  return total;
}

/** The answer's email fields: counts as they are, rates over emails_sent (0 when nothing was sent). */
export function emailSummary(c: EmailCounts): EmailSummaryDto {
  return {
    emails_sent: c.sent,
    delivered: c.delivered,
    bounced: c.bounced,
    complaints: c.complained,
    opens: c.opened,
    clicks: c.clicked,
    unsubscribes: c.unsubscribed,
    delivery_rate: percent(c.delivered, c.sent),
    open_rate: percent(c.openedUnique, c.sent),
    click_rate: percent(c.clickedUnique, c.sent),
    unique_opens: c.openedUnique,
    machine_opens: c.openedMachine,
    unique_clicks: c.clickedUnique,
    machine_clicks: c.clickedMachine,
  };
}

/** Every date of the window, oldest first, with the days that had activity filled in and zeros elsewhere. */
export function dailySeries(window: AnalyticsWindow, days: DayCounts[]): DailyAnalyticsDto[] {
  const byDate = new Map(days.map((day) => [day.date, day]));
  return datesOf(window).map((date) => {
    const d = byDate.get(date);
    return {
      date,
      emails_sent: d?.sent ?? 0,
      delivered: d?.delivered ?? 0,
      bounced: d?.bounced ?? 0,
      complaints: d?.complained ?? 0,
      opens: d?.opened ?? 0,
      clicks: d?.clicked ?? 0,
      unsubscribes: d?.unsubscribed ?? 0,
      submissions: d?.submissions ?? 0,
      spam_blocked: d?.spam ?? 0,
      forwarded: d?.forwarded ?? 0,
    };
  });
}
