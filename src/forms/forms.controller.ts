import { Body, Controller, Delete, Get, Param, Patch, Post, Query, StreamableFile } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { SuccessResponseDto } from '../common/http/success-response.dto';
import { AppConfigService } from '../config/app-config.service';
import {
  CreateFormDto,
  FormDto,
  FormListDto,
  ListSubmissionsQueryDto,
  SubmissionDto,
  SubmissionPageDto,
  UpdateFormDto,
} from './dto/form.dto';
import type { Form } from './form.entity';
import { FormsService } from './forms.service';
import { SubmissionNotificationDto, SuppressedRecipientDto } from './notifications/notification.dto';
import { SubmissionNotifications } from './notifications/submission-notifications';
import { CSV_FIELD_COLUMNS, SubmissionsExportService } from './submissions-export.service';

/** Every form of the account (domain, collection, stand-alone and instant ones) and their stored submissions. */
@ApiTags('Forms')
@Controller('api/forms')
export class FormsController {
  constructor(
    private readonly forms: FormsService,
    private readonly exports: SubmissionsExportService,
    private readonly config: AppConfigService,
    private readonly notifications: SubmissionNotifications,
  ) {}

  @Get()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.read' })
  @ApiOperation({ summary: 'List the account’s forms' })
  @ApiOkResponse({ type: FormListDto })
  async list(@CurrentAuth() auth: AuthContext): Promise<FormListDto> {
    const forms = await this.forms.list(auth.accountId);
    const presented = await this.present(forms);
    return { forms: presented, count: presented.length };
  }

  @Post()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({
    summary: 'Create a stand-alone form',
    description:
      'Browsers post to its submitUrl (/f/{id}). Any setting of the configuration file may be given besides name, to and subject.',
  })
  @ApiCreatedResponse({ type: FormDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateFormDto): Promise<FormDto> {
    const { name, ...settings } = dto;
    const form = await this.forms.create(auth.accountId, { name, settings });
    return FormDto.from(form, 0, this.config.publicUrl);
  }

  @Get(':id')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.read' })
  @ApiOperation({ summary: 'Read one form' })
  @ApiOkResponse({ type: FormDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async get(@CurrentAuth() auth: AuthContext, @Param('id') id: string): Promise<FormDto> {
    const [form] = await this.present([await this.forms.get(auth.accountId, id)]);
    return form;
  }

  @Patch(':id')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({
    summary: 'Change a form’s settings',
    description: 'A setting given replaces the stored one, null removes it, an absent one is kept.',
  })
  @ApiOkResponse({ type: FormDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async update(@CurrentAuth() auth: AuthContext, @Param('id') id: string, @Body() dto: UpdateFormDto): Promise<FormDto> {
    const [form] = await this.present([await this.forms.update(auth.accountId, id, { ...dto })]);
    return form;
  }

  @Delete(':id')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({ summary: 'Delete a form and its stored submissions' })
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async remove(@CurrentAuth() auth: AuthContext, @Param('id') id: string): Promise<SuccessResponseDto> {
    const form = await this.forms.remove(auth.accountId, id);
    return { success: true, message: `Form ${form.name} deleted` };
  }

  @Get(':id/submissions')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.read' })
  @ApiOperation({ summary: 'A form’s stored submissions, newest first; ?format=csv for a spreadsheet' })
  @ApiExtraModels(SubmissionPageDto)
  @ApiOkResponse({
    description:
      `JSON page, or with format=csv a CSV file of every submission (streamed): the form's requiredFields and its most ` +
      `frequent field names up to ${CSV_FIELD_COLUMNS} get a column each, in the order the form posts them; a row's other ` +
      'fields go to other_fields as JSON. Fields keep the order they were posted in (JSON too).',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(SubmissionPageDto) } },
      'text/csv': {
        schema: { type: 'string' },
        example:
          'id,created_at,status,email,message,files,ip,user_agent,origin,other_fields\r\n' +
          'sub_1,2026-06-09T10:00:00.000Z,accepted,ada@example.org,Hello!,,203.0.113.7,Mozilla/5.0,https://example.com,"{""company"":""Acme""}"\r\n',
      },
    },
  })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async submissions(
    @CurrentAuth() auth: AuthContext,
    @Param('id') id: string,
    @Query() query: ListSubmissionsQueryDto,
  ): Promise<SubmissionPageDto | StreamableFile> {
    const form = await this.forms.get(auth.accountId, id);
    const filter = { status: query.status, spam: query.spam, notification: query.notification };
    if (query.format === 'csv') return this.exports.csv(auth.accountId, form, filter);
    const page = await this.forms.listSubmissions(auth.accountId, form.id, {
      limit: query.limit ?? 50,
      cursor: query.cursor,
      ...filter,
    });
    const notifications = await this.notifications.ofPage(auth.accountId, page.submissions);
    const submissions = page.submissions.map((s) => SubmissionDto.from(s, SubmissionNotificationDto.from(notifications.get(s.id)!)));
    return { submissions, total: page.total, nextCursor: page.nextCursor };
  }

  private async present(forms: Form[]): Promise<FormDto[]> {
    const [counts, suppressed] = await Promise.all([
      this.forms.submissionCounts(forms.map((f) => f.id)),
      this.notifications.suppressedRecipients(forms),
    ]);
    return forms.map((form) =>
      FormDto.from(form, counts.get(form.id) ?? 0, this.config.publicUrl, (suppressed.get(form.id) ?? []).map(SuppressedRecipientDto.from)),
    );
  }
}
