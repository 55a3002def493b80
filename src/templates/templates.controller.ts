import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Post, Put } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { SuccessResponseDto } from '../common/http/success-response.dto';
import {
  CreateTemplateDto,
  RenderedTemplateDto,
  RenderTemplateDto,
  TemplateDto,
  TemplateListDto,
  UpdateTemplateDto,
} from './dto/template.dto';
import { TemplatesService } from './templates.service';

const NAME_PARAM = { name: 'name', example: 'welcome' };

@ApiTags('Templates')
@Controller('email/templates')
export class TemplatesController {
  constructor(private readonly templates: TemplatesService) {}

  @Post()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'templates.write' })
  @ApiOperation({
    summary: 'Store a template',
    description:
      'type email (default), sent with /email/send: Handlebars: {{value}}, sections {{#flag}}…{{/flag}}, loops ' +
      '{{#items}}…{{/items}}, and the helpers if, unless, each, with, lookup. type form or acknowledgment, used by forms: ' +
      'Liquid with {{ form.<field> }}, {{ domain }}, {{ timestamp }}, {{ ip }}, {{ submission.id }}, a || b, | nl2br, ' +
      '| date: "%Y-%m-%d" and {% if %}…{% endif %}. The template is compiled now: a syntax error is a 400 naming the part and line.',
  })
  @ApiCreatedResponse({ type: TemplateDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Invalid field or template syntax error (details.fields)' })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The account has a template with that name' })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateTemplateDto): Promise<TemplateDto> {
    return TemplateDto.from(await this.templates.create(auth.accountId, dto));
  }

  @Get()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'templates.read' })
  @ApiOperation({ summary: 'List the account’s templates, by name' })
  @ApiOkResponse({ type: TemplateListDto })
  async list(@CurrentAuth() auth: AuthContext): Promise<TemplateListDto> {
    const templates = await this.templates.list(auth.accountId);
    return { templates: templates.map(TemplateDto.from), count: templates.length };
  }

  @Get(':name')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'templates.read' })
  @ApiOperation({ summary: 'Read a template' })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ type: TemplateDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async get(@CurrentAuth() auth: AuthContext, @Param('name') name: string): Promise<TemplateDto> {
    return TemplateDto.from(await this.templates.get(auth.accountId, name));
  }

  @Put(':name')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'templates.write' })
  @ApiOperation({
    summary: 'Change a template',
    description: 'Fields left out keep their value; html or text null removes that part (one must remain). Compiled like a new one.',
  })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ type: TemplateDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'Renamed to a name the account uses already' })
  async update(@CurrentAuth() auth: AuthContext, @Param('name') name: string, @Body() dto: UpdateTemplateDto): Promise<TemplateDto> {
    return TemplateDto.from(await this.templates.update(auth.accountId, name, dto));
  }

  @Delete(':name')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'templates.write' })
  @ApiOperation({ summary: 'Delete a template' })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async remove(@CurrentAuth() auth: AuthContext, @Param('name') name: string): Promise<SuccessResponseDto> {
    const template = await this.templates.remove(auth.accountId, name);
    return { success: true, message: `Template ${template.name} deleted` };
  }

  @Post(':name/render')
  @HttpCode(HttpStatus.OK)
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'templates.read' })
  @ApiOperation({
    summary: 'Preview a template with variables',
    description:
      'Renders exactly as a send would; nothing is sent. For a form or acknowledgment template the variables are the ' +
      'Liquid context, e.g. {"form": {"name": "Ada"}, "domain": "example.com", "timestamp": "2024-05-06T10:00:00Z", "ip": "203.0.113.9"}.',
  })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ type: RenderedTemplateDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async render(
    @CurrentAuth() auth: AuthContext,
    @Param('name') name: string,
    @Body() dto: RenderTemplateDto,
  ): Promise<RenderedTemplateDto> {
    const rendered = await this.templates.preview(auth.accountId, name, dto.variables ?? {});
    return { subject: rendered.subject, html: rendered.html ?? null, text: rendered.text ?? null };
  }
}
