import { Body, Controller, Get, Header, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception';
import type { AuthContext } from '../../auth/auth-context';
import { Auth, Public } from '../../auth/auth.decorator';
import { CurrentAuth } from '../../auth/current-auth.decorator';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { ApiNotFoundPageResponse, HTML_PAGE } from '../../common/http/page-responses';
import { CONFIRMATION_EMAILS_PER_HOUR } from '../../rate-limits/rate-limit.policy';
import { AppConfigService } from '../../config/app-config.service';
import { QUOTA_429_DESCRIPTION } from '../../quotas/quota-docs';
import { FormDto, FormListDto, ListSubmissionsQueryDto, SubmissionDto, SubmissionPageDto } from '../dto/form.dto';
import { FormsService } from '../forms.service';
import { SubmissionNotificationDto } from '../notifications/notification.dto';
import { SubmissionNotifications } from '../notifications/submission-notifications';
import { simplePage } from '../submissions/pages';
import { CreateInstantFormBatchDto, CreateInstantFormDto } from './instant-forms.dto';
import { InstantFormsService } from './instant-forms.service';

/** The 429s of a request that emails confirmations. */
const CONFIRMATIONS_429 = ApiTooManyRequestsResponse({
  type: ErrorBodyDto,
  description:
    `RATE_LIMIT_EXCEEDED: the account’s confirmation emails would pass ${CONFIRMATION_EMAILS_PER_HOUR} an hour (details: limit, ` +
    `remaining, reset_time, retry_after, requested; the request is refused whole); an endpoint or key limit; or ${QUOTA_429_DESCRIPTION}`,
});

@ApiTags('Instant forms')
@Controller('instant/forms')
export class InstantFormsController {
  constructor(
    private readonly instant: InstantFormsService,
    private readonly forms: FormsService,
    private readonly config: AppConfigService,
    private readonly notifications: SubmissionNotifications,
  ) {}

  @Post()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({
    summary: 'Create an instant form',
    description:
      'The address gets a confirmation link; until it is followed, submissions are stored (held) and nothing is delivered. ' +
      `The confirmation email counts against the account’s email quota, and an account sends at most ${CONFIRMATION_EMAILS_PER_HOUR} ` +
      'confirmation emails an hour.',
  })
  @ApiCreatedResponse({ type: FormDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @CONFIRMATIONS_429
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateInstantFormDto): Promise<FormDto> {
    const [form] = await this.instant.create(auth.accountId, [dto]);
    return FormDto.from(form, 0, this.config.publicUrl);
  }

  @Post('batch')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({
    summary: 'Create up to 50 instant forms at once',
    description:
      'All or nothing: a bad entry is named by its index (forms[3].email), and a batch whose confirmation emails would pass the ' +
      'hourly cap or the email quota is refused whole. Counted under the /instant/forms endpoint limit.',
  })
  @ApiCreatedResponse({ type: FormListDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @CONFIRMATIONS_429
  async createBatch(@CurrentAuth() auth: AuthContext, @Body() dto: CreateInstantFormBatchDto): Promise<FormListDto> {
    const forms = await this.instant.create(auth.accountId, dto.forms);
    return { forms: forms.map((form) => FormDto.from(form, 0, this.config.publicUrl)), count: forms.length };
  }

  @Get('confirm/:token')
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'The confirmation link of an instant form (a GET, so it works from any email client)' })
  @ApiOkResponse({ description: 'An HTML page saying the form is confirmed', content: HTML_PAGE })
  @ApiNotFoundPageResponse('The link is not known')
  async confirm(@Param('token') token: string, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<string> {
    const result = await this.instant.confirm(token);
    if (result.state === 'unknown') {
      // A person following the link gets a page; any other client the one error body (D-10).
      if (req.accepts(['json', 'html']) !== 'html') throw AppException.notFound('Confirmation link');
      res.status(404);
      return simplePage('Link not found', ['This confirmation link is not known. It may have been mistyped, or its form deleted.']);
    }
    const released = result.released
      ? ` ${result.released} submission${result.released === 1 ? ' that was' : 's that were'} waiting ${result.released === 1 ? 'is' : 'are'} on the way.`
      : '';
    const until = result.waitingUntil ? ` after ${result.waitingUntil.toISOString().slice(0, 16).replace('T', ' ')} UTC` : ' later';
    const waiting = result.waiting
      ? [
          `${result.waiting} earlier submission${result.waiting === 1 ? ' waits' : 's wait'} for the sender’s email allowance: ` +
            `open this link again${until} to receive ${result.waiting === 1 ? 'it' : 'them'}.`,
        ]
      : [];
    return simplePage(result.state === 'confirmed' ? 'Form confirmed' : 'Already confirmed', [
      `Submissions to “${result.form.name}” will now be sent to you.${released}`,
      ...waiting,
    ]);
  }

  @Get(':id/submissions')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.read' })
  @ApiOperation({ summary: 'An instant form’s stored submissions (held ones included), newest first' })
  @ApiOkResponse({ type: SubmissionPageDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async submissions(
    @CurrentAuth() auth: AuthContext,
    @Param('id') id: string,
    @Query() query: ListSubmissionsQueryDto,
  ): Promise<SubmissionPageDto> {
    const form = await this.forms.get(auth.accountId, id, ['instant']);
    const page = await this.forms.listSubmissions(auth.accountId, form.id, {
      limit: query.limit ?? 50,
      cursor: query.cursor,
      status: query.status,
      spam: query.spam,
      notification: query.notification,
    });
    const notifications = await this.notifications.ofPage(auth.accountId, page.submissions);
    const submissions = page.submissions.map((s) => SubmissionDto.from(s, SubmissionNotificationDto.from(notifications.get(s.id)!)));
    return { submissions, total: page.total, nextCursor: page.nextCursor };
  }
}
