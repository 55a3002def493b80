import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsObject, IsOptional, IsString, Length, Matches, MaxLength, ValidateIf } from 'class-validator';
import { Template, TEMPLATE_TYPES, TemplateType } from '../template.entity';
import { TEMPLATE_NAME_PATTERN } from '../templates.service';

const NAME_RULE = '1-100 letters, digits, _ . or -, starting with a letter or digit; unique in the account';
const PART_LIMIT = 'At most 512 KB.';
const TYPE_RULE =
  'email (default): Handlebars, sent with /email/send. form / acknowledgment: Liquid, the notification and ' +
  'acknowledgment emails of form submissions; in their html every value is HTML-escaped and there is no raw filter.';

export class CreateTemplateDto {
  @ApiProperty({ example: 'welcome', description: `Name used to send with it (\`template\`). ${NAME_RULE}.` })
  @IsString()
  @Matches(TEMPLATE_NAME_PATTERN, { message: `name must be ${NAME_RULE}` })
  name: string;

  @ApiPropertyOptional({ example: 'Sent after sign-up', maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({ enum: TEMPLATE_TYPES, default: 'email', description: TYPE_RULE })
  @IsOptional()
  @IsIn(TEMPLATE_TYPES)
  type?: TemplateType;

  @ApiProperty({
    example: 'Welcome, {{name}}!',
    description: `Handlebars; rendered without HTML escaping, line breaks become spaces. ${PART_LIMIT}`,
  })
  @IsString()
  @Length(1, 512 * 1024)
  subject: string;

  @ApiPropertyOptional({
    example: '<h1>Hi {{name}}</h1>{{#items}}<li>{{title}}</li>{{/items}}<a href="{{unsubscribeUrl}}">Unsubscribe</a>',
    description:
      `Handlebars HTML body: values are HTML-escaped ({{{triple}}} inserts raw HTML). {{subject}} and {{unsubscribeUrl}} ` +
      `are always defined. html, text or both. ${PART_LIMIT}`,
  })
  @IsOptional()
  @IsString()
  html?: string;

  @ApiPropertyOptional({ example: 'Hi {{name}}', description: `Handlebars plain-text body, not escaped. ${PART_LIMIT}` })
  @IsOptional()
  @IsString()
  text?: string;

  @ApiPropertyOptional({
    example: { company: 'Acme' },
    description:
      'Default values of the placeholders; the variables of a send (or a form template’s context) win over them. At most 64 KB as JSON.',
  })
  @IsOptional()
  @IsObject()
  variables?: Record<string, unknown>;
}

/** PUT: fields left out keep their value; html or text null removes that part (one must remain). */
export class UpdateTemplateDto {
  @ApiPropertyOptional({ example: 'welcome-v2', description: `A new name renames the template. ${NAME_RULE}.` })
  @IsOptional()
  @IsString()
  @Matches(TEMPLATE_NAME_PATTERN, { message: `name must be ${NAME_RULE}` })
  name?: string;

  @ApiPropertyOptional({ example: 'Sent when an account signs up', type: String, nullable: true, maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({ enum: TEMPLATE_TYPES, description: 'A new type checks the content in that type’s language.' })
  @IsOptional()
  @IsIn(TEMPLATE_TYPES)
  type?: TemplateType;

  @ApiPropertyOptional({ example: 'Welcome aboard, {{name}}!' })
  @IsOptional()
  @IsString()
  @Length(1, 512 * 1024)
  subject?: string;

  @ApiPropertyOptional({ example: '<p>Hello {{name}}</p>', type: String, nullable: true, description: 'null removes the HTML part' })
  @ValidateIf((_, value) => value !== null && value !== undefined)
  @IsString()
  html?: string | null;

  @ApiPropertyOptional({ example: 'Hello {{name}}', type: String, nullable: true, description: 'null removes the text part' })
  @ValidateIf((_, value) => value !== null && value !== undefined)
  @IsString()
  text?: string | null;

  @ApiPropertyOptional({
    example: { name: 'there' },
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'Default values of the placeholders; null removes them',
  })
  @ValidateIf((_, value) => value !== null && value !== undefined)
  @IsObject()
  variables?: Record<string, unknown> | null;
}

export class RenderTemplateDto {
  @ApiPropertyOptional({
    example: { name: 'Ada', items: [{ title: 'Engines' }], premium: true },
    description: 'Values for the placeholders, as a send would pass them; for a form template, the Liquid context.',
  })
  @IsOptional()
  @IsObject()
  variables?: Record<string, unknown>;
}

export class RenderedTemplateDto {
  @ApiProperty({ example: 'Welcome, Ada!' })
  subject: string;

  @ApiProperty({ type: String, nullable: true, example: '<h1>Hi Ada</h1>' })
  html: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'Hi Ada' })
  text: string | null;
}

export class TemplateDto {
  @ApiProperty({ example: 'tpl_7Qm2x9LpWk1vE8sYb3TzRn' })
  id: string;

  @ApiProperty({ example: 'welcome' })
  name: string;

  @ApiProperty({ example: 'Sent when an account signs up', type: String, nullable: true })
  description: string | null;

  @ApiProperty({ enum: TEMPLATE_TYPES, example: 'email' })
  type: TemplateType;

  @ApiProperty({ example: 'Welcome, {{name}}!' })
  subject: string;

  @ApiProperty({ example: '<p>Hi {{name}}</p>', type: String, nullable: true })
  html: string | null;

  @ApiProperty({ example: 'Hi {{name}}', type: String, nullable: true })
  text: string | null;

  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, example: { company: 'Acme' } })
  variables: Record<string, unknown> | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  static readonly from = (template: Template): TemplateDto => {
    return {
      id: template.id,
      name: template.name,
      description: template.description,
      type: template.type,
      subject: template.subject,
      html: template.html,
      text: template.text,
      variables: template.variables,
      createdAt: template.createdAt.toISOString(),
      updatedAt: template.updatedAt.toISOString(),
    };
  };
}

export class TemplateListDto {
  @ApiProperty({ type: [TemplateDto] })
  templates: TemplateDto[];

  @ApiProperty({ example: 1 })
  count: number;
}
