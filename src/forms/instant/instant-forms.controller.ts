import { Body, Controller, Get, Header, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  getSchemaPath,
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
import { formLanguage } from '../i18n/language';
import { confirmationPage } from './confirmation-pages';
import { CreateInstantFormBatchDto, CreateInstantFormDto, InstantFormConfirmationDto } from './instant-forms.dto';
import { InstantFormsService } from './instant-forms.service';

/** The confirmation pages load nothing and post only to themselves. */
const PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

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
      'The address gets a confirmation link; until the button of its page is pressed, submissions are stored (held) and nothing is delivered. ' +
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
  @Header('Content-Security-Policy', PAGE_POLICY)
  @ApiOperation({
    summary: 'The confirmation link of an instant form: a page whose button confirms',
    description:
      'Opening the link changes nothing (mail scanners follow links): the page, in the browser’s language, says what the ' +
      'form is and how many submissions wait, and its button posts to the same URL.',
  })
  @ApiOkResponse({ description: 'An HTML page with the button, or saying the form is confirmed already', content: HTML_PAGE })
  @ApiNotFoundPageResponse('The link is not known')
  async confirmationPage(@Param('token') token: string, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<string> {
    const view = await this.instant.view(token);
    if (view.state === 'unknown') {
      // A person following the link gets a page; any other client the one error body (D-10).
      if (!wantsPage(req)) throw AppException.notFound('Confirmation link');
      res.status(404);
    }
    return confirmationPage(view, formLanguage(undefined, req.get('accept-language')));
  }

  @Post('confirm/:token')
  @Public()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Content-Security-Policy', PAGE_POLICY)
  @ApiOperation({
    summary: 'Confirm an instant form (the button of its link’s page, or a JSON client)',
    description:
      'Confirms the form and releases its held submissions, oldest first, in pages of 50 (the first before the answer, ' +
      'the rest at once after it). Exactly one confirmation releases them: a concurrent or later one is answered ' +
      '`already_confirmed` and sends nothing. A browser’s form post (Accept preferring text/html) gets an HTML page; any ' +
      'other client the body below.',
  })
  @ApiExtraModels(InstantFormConfirmationDto)
  @ApiOkResponse({
    description: 'The form is confirmed (by this request or before)',
    content: { 'application/json': { schema: { $ref: getSchemaPath(InstantFormConfirmationDto) } }, ...HTML_PAGE },
  })
  @ApiNotFoundPageResponse('The link is not known')
  async confirm(
    @Param('token') token: string,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string | InstantFormConfirmationDto> {
    const view = await this.instant.confirm(token);
    if (!wantsPage(req)) {
      if (view.state === 'unknown') throw AppException.notFound('Confirmation link');
      return InstantFormConfirmationDto.from(view);
    }
    res.status(view.state === 'unknown' ? 404 : 200).type('html');
    return confirmationPage(view, formLanguage(undefined, req.get('accept-language')));
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

/** A person's browser (Accept preferring text/html) gets pages; any other client JSON and the one error body. */
function wantsPage(req: Request): boolean {
  return req.accepts(['json', 'html']) === 'html';
}
