import { Body, Controller, Get, Header, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception';
import type { AuthContext } from '../../common/auth/auth-context';
import { Auth, Public } from '../../common/auth/auth.decorator';
import { CurrentAuth } from '../../common/auth/current-auth.decorator';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { ApiNotFoundPageResponse, HTML_PAGE } from '../../common/http/page-responses';
import { AppConfigService } from '../../config/app-config.service';
import { FormDto, FormListDto, ListSubmissionsQueryDto, SubmissionDto, SubmissionPageDto } from '../dto/form.dto';
import { FormsService } from '../forms.service';
import { simplePage } from '../submissions/pages';
import { CreateInstantFormBatchDto, CreateInstantFormDto } from './instant-forms.dto';
import { InstantFormsService } from './instant-forms.service';

@ApiTags('Instant forms')
@Controller('instant/forms')
export class InstantFormsController {
  constructor(
    private readonly instant: InstantFormsService,
    private readonly forms: FormsService,
    private readonly config: AppConfigService,
  ) {}

  @Post()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({
    summary: 'Create an instant form',
    description: 'The address gets a confirmation link; until it is followed, submissions are stored (held) and nothing is delivered.',
  })
  @ApiCreatedResponse({ type: FormDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateInstantFormDto): Promise<FormDto> {
    const [form] = await this.instant.create(auth.accountId, [dto]);
    return FormDto.from(form, 0, this.config.publicUrl);
  }

  @Post('batch')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({
    summary: 'Create up to 50 instant forms at once',
    description: 'All or nothing: a bad entry is named by its index (forms[3].email).',
  })
  @ApiCreatedResponse({ type: FormListDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
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
    const waiting = result.released
      ? ` ${result.released} submission${result.released === 1 ? ' that was' : 's that were'} waiting ${result.released === 1 ? 'is' : 'are'} on the way.`
      : '';
    return simplePage(result.state === 'confirmed' ? 'Form confirmed' : 'Already confirmed', [
      `Submissions to “${result.form.name}” will now be sent to you.${waiting}`,
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
    });
    return { submissions: page.submissions.map(SubmissionDto.from), total: page.total, nextCursor: page.nextCursor };
  }
}
