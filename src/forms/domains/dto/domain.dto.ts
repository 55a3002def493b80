import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import type { Domain, DomainStatus } from '../../../domains/domain.entity';
import type { DnsRecord, DnsRecordPurpose } from '../../../domains/dns-records';
import type { InboundFiltering } from '../../../domains/domain-settings';
import type { FormSettings } from '../../form-settings';
import { FormSettingsDto } from '../../dto/form-settings.dto';

export class CreateDomainDto {
  @ApiProperty({ example: 'example.com', description: 'Host name; lower-cased, internationalised names in punycode' })
  @IsString()
  @MaxLength(300)
  domain: string;
}

export class VerifyDomainDto extends CreateDomainDto {}

const FORMS_SCHEMA = {
  type: 'object',
  additionalProperties: { $ref: getSchemaPath(FormSettingsDto) },
  description: 'form slug → form settings, as in the configuration file. The slug send is reserved.',
  example: { contact: { recipients: ['team@example.com'], subject: 'New contact', replies: true } },
} as const;

const FORWARDING_SCHEMA = {
  type: 'object',
  additionalProperties: { type: 'array', items: { type: 'string', format: 'email' } },
  description: 'alias (local part, or * for every other address) → destinations (one address or a list, at most 20)',
  example: { info: ['owner@gmail.com'], '*': ['catchall@example.net'] },
} as const;

const INBOUND_FILTERING_SCHEMA = {
  type: 'object',
  properties: {
    spamThreshold: {
      type: 'number',
      minimum: 1,
      maximum: 1000,
      default: 5,
      description: 'SpamAssassin score at which forwarded mail is refused with 554 5.7.1, when the server runs spamd',
    },
    allowExecutableAttachments: {
      type: 'boolean',
      default: false,
      description: 'Forward attachments that are programs, installers or disk images (by their bytes); refused with 554 5.7.1 otherwise',
    },
  },
  description:
    'How mail to be forwarded is filtered at DATA; a setting left out is at its default. A message for several domains ' +
    'meets the strictest of their settings. A virus (when the server runs clamd) is always refused.',
  example: { spamThreshold: 5, allowExecutableAttachments: false },
} as const;

/**
 * PUT /domains/{domain}. A section given replaces the stored one, null removes it, an absent one is kept.
 * The service validates the contents and names each bad path in details.fields.
 */
@ApiExtraModels(FormSettingsDto)
export class UpdateDomainDto {
  @ApiPropertyOptional({
    type: [String],
    nullable: true,
    example: ['team@example.com'],
    description: 'Who gets /{domain}/send and /v1/{domain}/send submissions (at most 50)',
  })
  @IsOptional()
  contactRecipients?: unknown;

  @ApiPropertyOptional({ ...FORWARDING_SCHEMA, nullable: true })
  @IsOptional()
  forwarding?: unknown;

  @ApiPropertyOptional({ ...INBOUND_FILTERING_SCHEMA, nullable: true })
  @IsOptional()
  inboundFiltering?: unknown;

  @ApiPropertyOptional({ ...FORMS_SCHEMA, nullable: true })
  @IsOptional()
  forms?: unknown;
}

export class DnsRecordDto {
  @ApiProperty({ enum: ['verification', 'dkim', 'spf', 'dmarc'] })
  purpose: DnsRecordPurpose;

  @ApiProperty({ example: 'TXT' })
  type: 'TXT';

  @ApiProperty({ example: 'mr202611._domainkey.example.com' })
  name: string;

  @ApiProperty({ example: 'v=DKIM1; k=rsa; p=MIIBIjANBgkqh…' })
  value: string;

  @ApiProperty({ description: 'Verification and DKIM are needed; SPF (merge into an existing record) and DMARC are advised' })
  required: boolean;
}

@ApiExtraModels(FormSettingsDto)
export class DomainSettingsDto {
  @ApiPropertyOptional({ type: [String], example: ['team@example.com'] })
  contactRecipients?: string[];

  @ApiPropertyOptional(FORWARDING_SCHEMA)
  forwarding?: Record<string, string[]>;

  @ApiPropertyOptional(INBOUND_FILTERING_SCHEMA)
  inboundFiltering?: InboundFiltering;

  @ApiPropertyOptional(FORMS_SCHEMA)
  forms?: Record<string, FormSettings>;
}

export class DomainDto {
  @ApiProperty({ example: 'dom_6Jm2x0QpWk1vE8sYb3TzRn' })
  id: string;

  @ApiProperty({ example: 'example.com' })
  domain: string;

  @ApiProperty({
    enum: ['pending', 'verified', 'failed'],
    description: 'pending until the verification record is found; failed if not verified 72 h after creation (verify may still succeed)',
  })
  status: DomainStatus;

  @ApiProperty({ example: '9f1c2a7e4b6d8f0a1c3e5b7d9f1a3c5e' })
  verificationToken: string;

  @ApiProperty({ example: 'svc-verification=9f1c2a7e4b6d8f0a1c3e5b7d9f1a3c5e', description: 'The TXT value to publish at the domain' })
  verificationRecord: string;

  @ApiProperty({ type: [DnsRecordDto], description: 'Records to publish at your DNS host' })
  dnsRecords: DnsRecord[];

  @ApiProperty({ example: 'mr202611' })
  dkimSelector: string;

  @ApiProperty({ type: DomainSettingsDto })
  settings: DomainSettingsDto;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When an unverified domain becomes failed; null once verified',
  })
  verificationDeadline: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  verifiedAt: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Last DNS check' })
  lastCheckedAt: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'No TXT record found at example.com',
    description: 'Why the last check did not verify',
  })
  lastCheckError: string | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  static from(
    domain: Domain,
    view: { forms: Record<string, FormSettings>; verificationRecord: string; dnsRecords: DnsRecord[]; verificationDeadline: Date },
  ): DomainDto {
    return {
      id: domain.id,
      domain: domain.name,
      status: domain.status,
      verificationToken: domain.verificationToken,
      verificationRecord: view.verificationRecord,
      dnsRecords: view.dnsRecords,
      dkimSelector: domain.dkimSelector,
      settings: { ...domain.settings, ...(Object.keys(view.forms).length ? { forms: view.forms } : {}) },
      verificationDeadline: domain.status === 'verified' ? null : view.verificationDeadline.toISOString(),
      verifiedAt: domain.verifiedAt?.toISOString() ?? null,
      lastCheckedAt: domain.lastCheckedAt?.toISOString() ?? null,
      lastCheckError: domain.lastCheckError,
      createdAt: domain.createdAt.toISOString(),
      updatedAt: domain.updatedAt.toISOString(),
    };
  }
}

export class DomainListDto {
  @ApiProperty({ type: [DomainDto] })
  domains: DomainDto[];

  @ApiProperty({ example: 1 })
  count: number;
}
