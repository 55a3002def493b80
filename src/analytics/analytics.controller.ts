import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { AnalyticsService } from './analytics.service';
import { AnalyticsQueryDto, EmailAnalyticsQueryDto } from './dto/analytics-query.dto';
import { AnalyticsOverviewDto, EmailAnalyticsDto } from './dto/analytics.dto';

const COUNTING =
  'Counted from rollups kept as events happen (whole UTC hours, by the time of each event). emails_sent counts recipients the ' +
  'provider accepted; delivered, bounced, complaints and unsubscribes count their events; opens and clicks count ' +
  'people’s (machine_opens and machine_clicks apart: privacy proxies, scanners, hits within seconds of sending), ' +
  'unique_opens and unique_clicks the messages a person opened or clicked (once each). Rates are percent of ' +
  'emails_sent (delivered, unique_opens, unique_clicks), 2 decimals, 0 when nothing was sent. Every message of the ' +
  'account counts, form notifications and forwarded messages included.';

@ApiTags('Analytics')
@Controller()
export class AnalyticsController {
  constructor(private readonly analytics: AnalyticsService) {}

  @Get('email/analytics')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'analytics.read' })
  @ApiOperation({
    summary: 'Email analytics summary',
    description:
      `Counts and rates of the account's email over a period (default last_30_days) or from/to, and the messages ` +
      `received for forwarding. ${COUNTING}`,
  })
  @ApiOkResponse({ type: EmailAnalyticsDto })
  email(@CurrentAuth() auth: AuthContext, @Query() query: EmailAnalyticsQueryDto): Promise<EmailAnalyticsDto> {
    return this.analytics.email(auth.accountId, query);
  }

  @Get('analytics')
  @Auth({ keyTypes: ['admin'], permission: 'analytics.read' })
  @ApiOperation({
    summary: 'Account analytics: email, forms, forwarding and a daily series',
    description:
      `The email summary, form submissions (accepted and held; spam_blocked apart) per form, messages received for ` +
      `forwarding per domain, and one row per UTC date of the range (default last_30_days), zeros included. ${COUNTING}`,
  })
  @ApiOkResponse({ type: AnalyticsOverviewDto })
  overview(@CurrentAuth() auth: AuthContext, @Query() query: AnalyticsQueryDto): Promise<AnalyticsOverviewDto> {
    return this.analytics.overview(auth.accountId, query);
  }
}
