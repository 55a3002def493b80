import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsFQDN,
  IsIn,
  IsInt,
  IsISO8601,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { KEY_TYPES, KeyType, PERMISSIONS } from '../../auth/permissions';

export class KeyRestrictionsDto {
  @ApiPropertyOptional({
    type: [String],
    example: ['203.0.113.7', '2001:db8::/32', '10.0.0.0/8'],
    description: 'Only these client addresses (IPv4/IPv6 or CIDR) may use the key; others get 403 IP_NOT_ALLOWED.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  ip_whitelist?: string[];

  @ApiPropertyOptional({
    type: [String],
    example: ['example.com'],
    description: 'The request Origin/Referer host (forms) or the `from` domain (email) must be one of these or a subdomain.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsFQDN({ require_tld: false }, { each: true, message: 'each value in domain_restrictions must be a domain name' })
  domain_restrictions?: string[];

  @ApiPropertyOptional({ example: 500, description: 'Requests per hour; replaces the key’s rateLimit.' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  rate_limit?: number;

  @ApiPropertyOptional({ example: 30, description: 'Requests per minute.' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  burst_limit?: number;

  @ApiPropertyOptional({
    example: '2027-01-01T00:00:00Z',
    description: 'After this instant the key answers 401 AUTH_KEY_EXPIRED.',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  expires_at?: string;

  @ApiPropertyOptional({
    example: false,
    description: 'The key’s own hourly and per-minute limits do not apply; the account plan’s and the endpoint’s still do.',
  })
  @IsOptional()
  @IsBoolean()
  exempt?: boolean;

  @ApiPropertyOptional({ example: 2, description: 'Scales the key’s own hourly and per-minute limits (0.01 to 100).' })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0.01)
  @Max(100)
  multiplier?: number;
}

export class CreateApiKeyDto {
  @ApiProperty({ example: 'Production backend', maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiProperty({ enum: KEY_TYPES, example: 'usage' })
  @IsIn(KEY_TYPES)
  keyType: KeyType;

  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    example: 1000,
    minimum: 1,
    maximum: 100_000_000,
    description:
      'Requests per hour. Default 1000 (admin, usage) or 100 (public), never more than the calling key’s own. ' +
      'null: no hourly limit of the key’s own (the account’s plan still bounds it), only for a calling key that has none.',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  rateLimit?: number | null;

  @ApiPropertyOptional({ example: 'example.com', description: 'Required for public keys: the only domain the key works for.' })
  @IsOptional()
  @IsFQDN({ require_tld: false }, { message: 'domainScope must be a domain name' })
  domainScope?: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['email.send', 'templates.read'],
    description:
      `Default: everything the key type may hold. Vocabulary: ${PERMISSIONS.join(', ')}. ` +
      'Aliases: forms:send, forms, domains, analytics.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  permissions?: string[];

  @ApiPropertyOptional({ type: KeyRestrictionsDto })
  @IsOptional()
  @ValidateNested()
  @Type(() => KeyRestrictionsDto)
  restrictions?: KeyRestrictionsDto;
}

export class CreateAuthKeyDto {
  @ApiProperty({ example: 'CI pipeline' })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiProperty({
    type: [String],
    example: ['email.send'],
    description: 'The key type is inferred: usage, unless a permission is one only admin keys may hold.',
  })
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  permissions: string[];
}

export class ListApiKeysQueryDto {
  @ApiPropertyOptional({ enum: KEY_TYPES, description: 'Only keys of this type' })
  @IsOptional()
  @IsIn(KEY_TYPES)
  keyType?: KeyType;
}

/** PATCH /api-keys/{keyId}: every field optional; what is left out stays as it is. keyType and domainScope never change. */
export class UpdateApiKeyDto {
  @ApiPropertyOptional({ example: 'Production backend (EU)', maxLength: 200 })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  name?: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['email.send'],
    description: 'Replaces the key’s permissions, within its type’s ceiling and the calling key’s own (aliases as on creation).',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  permissions?: string[];

  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    example: 50_000,
    minimum: 1,
    maximum: 100_000_000,
    description:
      'Requests per hour, at most the calling key’s own. null: no hourly limit of the key’s own (the account’s plan ' +
      'still bounds it), only for a calling key that has none.',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  rateLimit?: number | null;

  @ApiPropertyOptional({
    type: KeyRestrictionsDto,
    nullable: true,
    description:
      'Laid over the key’s restrictions field by field: a value sets a field (a list replaces the list), null removes ' +
      'it, a field left out is kept. null removes every restriction. The key as changed must stay within the calling key.',
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => KeyRestrictionsDto)
  restrictions?: KeyRestrictionsDto | null;
}
