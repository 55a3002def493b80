import { Injectable } from '@nestjs/common';
import { dailySeries, emailSummary, sumDays } from './analytics-summary';
import { AnalyticsWindow, customWindow, DEFAULT_PERIOD, parseInstant, periodOf, periodWindow } from './analytics-window';
import { AnalyticsRepository } from './analytics.repository';
import type { AnalyticsQueryDto, EmailAnalyticsQueryDto, WindowQueryDto } from './dto/analytics-query.dto';
import type { AnalyticsOverviewDto, EmailAnalyticsDto } from './dto/analytics.dto';

/**
 * Email, form and forwarding analytics of one account (D-1: only the caller's), answered from the rollups: each
 * query reads at most a row per whole day of the window and 46 hours (per form for forms, per domain for forwarding),
 * whatever the number of messages.
 */
@Injectable()
export class AnalyticsService {
  constructor(private readonly repository: AnalyticsRepository) {}

  /** GET /email/analytics. */
  async email(accountId: string, query: EmailAnalyticsQueryDto): Promise<EmailAnalyticsDto> {
    const window = windowOf(query, query.period);
    const { forwarded, ...counts } = await this.repository.emailCounts(accountId, window);
    return { period: window.name, from: window.from.toISOString(), to: window.to.toISOString(), ...emailSummary(counts), forwarded };
  }

  /**
   * GET /analytics: the email summary, the forms, forwarding and the daily series of one window. The summary is the
   * sum of the days (they hold every hour of the window once), so the email rollup is read once.
   */
  async overview(accountId: string, query: AnalyticsQueryDto): Promise<AnalyticsOverviewDto> {
    const window = windowOf(query, query.range);
    const [days, forms, domains] = await Promise.all([
      this.repository.dayCounts(accountId, window),
      this.repository.formCounts(accountId, window),
      this.repository.forwardingCounts(accountId, window),
    ]);
    return {
      range: window.name,
      from: window.from.toISOString(),
      to: window.to.toISOString(),
      email: emailSummary(sumDays(days)),
      forms: {
        submissions: forms.reduce((sum, f) => sum + f.submissions, 0),
        spam_blocked: forms.reduce((sum, f) => sum + f.spam, 0),
        by_form: forms.map((f) => ({ form_id: f.formId, name: f.name, submissions: f.submissions, spam_blocked: f.spam })),
      },
      forwarding: {
        received: domains.reduce((sum, d) => sum + d.received, 0),
        recipients: domains.reduce((sum, d) => sum + d.recipients, 0),
        by_domain: domains,
      },
      daily: dailySeries(window, days),
    };
  }
}

/** The validated query's window: from/to when given, else the named period (an alias as its period), else the default. */
function windowOf(query: WindowQueryDto, name: string | undefined): AnalyticsWindow {
  if (query.from !== undefined && query.to !== undefined) return customWindow(parseInstant(query.from)!, parseInstant(query.to)!);
  return periodWindow(periodOf(name ?? DEFAULT_PERIOD) ?? DEFAULT_PERIOD, new Date());
}
