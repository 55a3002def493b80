import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional } from 'class-validator';

/** `true`/`false` as query strings; anything else is left for IsBoolean to refuse. */
const queryBoolean = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value);

export class PushConfigQueryDto {
  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Answer the plan without applying it' })
  @IsOptional()
  @Transform(queryBoolean)
  @IsBoolean({ message: 'dryRun must be true or false' })
  dryRun?: boolean;

  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Delete what the file does not name; without it nothing is deleted' })
  @IsOptional()
  @Transform(queryBoolean)
  @IsBoolean({ message: 'prune must be true or false' })
  prune?: boolean;
}

/** The declarative file (spec: project, domains, collections, templates, settings; and projects), as JSON. */
export class ConfigFileDto {
  @ApiPropertyOptional({
    example: { name: 'Acme website', slug: 'acme' },
    description: 'The project the file describes: each collection that does not name its own project is in it',
  })
  project?: { name: string; slug: string };

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { marketing: { name: 'Marketing site' } },
    description:
      'The account’s other projects by slug: { name } (or the name alone; default the slug). A project named here or ' +
      'in project is created or renamed; without prune, projects the file does not name are kept',
  })
  projects?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: {
      'example.com': {
        contactRecipients: ['team@example.com'],
        forwarding: { info: 'owner@example.org', '*': ['owner@example.org'] },
        forms: { contact: { name: 'Contact', to: 'team@example.com', template: 'contact-notification' } },
      },
    },
    description:
      'By domain name: contactRecipients, forwarding (alias or * → addresses), inboundFiltering (spam threshold, attachment types) ' +
      'and forms (slug → settings), as PUT /domains/{domain}',
  })
  domains?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: {
      website: { name: 'Website', forms: { newsletter: { to: 'team@example.com' } } },
      landing: { name: 'Landing pages', project: 'marketing' },
      legacy: { project: null },
    },
    description:
      'By slug: name, project and forms (slug → settings; each names its recipients). project is the slug of a project ' +
      'of the file or the account, or null for none; left out, the collection is in the file’s project, or without ' +
      'one stays in the project it is in (a new one: none)',
  })
  collections?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: {
      'contact-notification': { type: 'form', subject: 'New message from {{ form.name || "someone" }}', text: '{{ form.message }}' },
    },
    description:
      'By name: type (form, acknowledgment or email; default form), subject, text, html, description, variables. html_file is read by the command line client.',
  })
  templates?: Record<string, unknown>;

  @ApiPropertyOptional({
    example: { global_limits: { hourly: 1000, daily: 10000 } },
    description: 'Account-wide global_limits (hourly, daily, monthly)',
  })
  settings?: Record<string, unknown>;
}

/**
 * A field's value as the configuration file has it: any JSON value, or null. Each choice is nullable because a
 * `nullable` beside `anyOf` makes @nestjs/swagger add `type: object`.
 */
const ANY_JSON_VALUE = ['string', 'number', 'boolean', 'array', 'object'].map((type) => ({
  type,
  nullable: true,
  ...(type === 'array' && { items: {} }),
}));

export class FieldChangeDto {
  @ApiProperty({ example: 'to' })
  field: string;

  @ApiProperty({
    anyOf: ANY_JSON_VALUE,
    example: 'old@example.com',
    description: 'null when the resource is created or the field was not set',
  })
  before: unknown;

  @ApiProperty({
    anyOf: ANY_JSON_VALUE,
    example: 'team@example.com',
    description: 'null when the resource is deleted or the field is removed',
  })
  after: unknown;
}

export class ConfigChangeDto {
  @ApiProperty({ enum: ['create', 'update', 'delete'] })
  action: string;

  @ApiProperty({ enum: ['project', 'settings', 'domain', 'forwarding', 'form', 'collection', 'template'] })
  kind: string;

  @ApiProperty({ example: 'domains.example.com.forms.contact', description: 'Where the resource is in the file' })
  path: string;

  @ApiProperty({ type: [FieldChangeDto] })
  changes: FieldChangeDto[];
}

export class ConfigSummaryDto {
  @ApiProperty({ example: 2 })
  create: number;

  @ApiProperty({ example: 1 })
  update: number;

  @ApiProperty({ example: 0 })
  delete: number;
}

export class PushResultDto {
  @ApiProperty({ description: 'False for a dry run: nothing was changed' })
  applied: boolean;

  @ApiProperty()
  dryRun: boolean;

  @ApiProperty()
  prune: boolean;

  @ApiProperty({ type: ConfigSummaryDto })
  summary: ConfigSummaryDto;

  @ApiProperty({ type: [ConfigChangeDto], description: 'Empty when the account already matches the file' })
  changes: ConfigChangeDto[];

  @ApiProperty({
    type: [String],
    example: ['domains.old.example'],
    description: 'What the account has and the file does not name: kept, as the push does not prune',
  })
  notInFile: string[];

  @ApiProperty({
    example: [
      'example.com is pending: publish its DNS records (GET /domains/example.com) and verify it (POST /domains/example.com/verify) before it takes form posts and mail',
    ],
    type: [String],
    description: 'What to do next, such as verifying a new domain',
  })
  notes: string[];
}
