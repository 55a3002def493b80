import { ApiProperty } from '@nestjs/swagger';
import { KEY_TYPES, KeyType, Permission } from '../../auth/permissions';
import type { ApiKey } from '../../auth/api-key.entity';
import { KeyRestrictionsDto } from './create-api-key.dto';

/** A key as listings show it: never the secret. */
export class ApiKeyDto {
  @ApiProperty({ example: 'key_5bV0tq6Yk3mZ1h9nQe2LrW' })
  keyId: string;

  @ApiProperty({ example: 'Production backend' })
  name: string;

  @ApiProperty({ enum: KEY_TYPES })
  keyType: KeyType;

  @ApiProperty({ nullable: true, type: String, example: null })
  domainScope: string | null;

  @ApiProperty({ type: [String], example: ['email.send'] })
  permissions: Permission[];

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 1000,
    description:
      'Requests per hour. null: the key has no hourly limit of its own (an account’s first admin key, the operator’s ' +
      'bootstrap key); its account’s plan and the endpoint limits still bound it.',
  })
  rateLimit: number | null;

  @ApiProperty({ type: KeyRestrictionsDto })
  restrictions: KeyRestrictionsDto;

  @ApiProperty({ example: 'svc_sk_usage_…9f3a', description: 'Masked key, to recognise it' })
  keyPreview: string;

  @ApiProperty({ nullable: true, type: String, format: 'date-time' })
  expiresAt: string | null;

  @ApiProperty({ nullable: true, type: String, format: 'date-time' })
  lastUsedAt: string | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  static readonly from = (key: ApiKey): ApiKeyDto => {
    return {
      keyId: key.id,
      name: key.name,
      keyType: key.keyType,
      domainScope: key.domainScope,
      permissions: key.permissions,
      rateLimit: key.rateLimit,
      restrictions: key.restrictions,
      keyPreview: key.keyPreview,
      expiresAt: key.expiresAt?.toISOString() ?? null,
      lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
      createdAt: key.createdAt.toISOString(),
    };
  };
}

export class CreatedApiKeyDto extends ApiKeyDto {
  @ApiProperty({
    example: 'svc_sk_usage_9c1e…',
    description: 'The full secret. Returned only in this response; store it now.',
  })
  key: string;
}

export class CreateApiKeyResponseDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ type: CreatedApiKeyDto })
  apiKey: CreatedApiKeyDto;

  @ApiProperty({ example: 'API key created' })
  message: string;

  @ApiProperty({ example: 'Store this key securely: it is shown only once and cannot be recovered.' })
  securityNote: string;

  static of(key: ApiKey, secret: string): CreateApiKeyResponseDto {
    return {
      success: true,
      apiKey: { ...ApiKeyDto.from(key), key: secret },
      message: 'API key created',
      securityNote: 'Store this key securely: it is shown only once and cannot be recovered.',
    };
  }
}

export class ApiKeyListDto {
  @ApiProperty({ type: [ApiKeyDto] })
  apiKeys: ApiKeyDto[];

  @ApiProperty({ example: 2 })
  count: number;
}
