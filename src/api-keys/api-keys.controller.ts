import { Body, Controller, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { SuccessResponseDto } from '../common/http/success-response.dto';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyDto, ApiKeyListDto, CreateApiKeyResponseDto } from './dto/api-key-response.dto';
import { CreateApiKeyDto, CreateAuthKeyDto, ListApiKeysQueryDto, UpdateApiKeyDto } from './dto/create-api-key.dto';

@ApiTags('API keys')
@Controller()
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Post('api-keys')
  @Auth({ keyTypes: ['admin'], permission: 'keys.manage' })
  @ApiOperation({
    summary: 'Create an API key',
    description:
      'The full key is returned in this response only. The new key is never wider than the calling key: ' +
      'restrictions left out are inherited from it, and permissions, IP ranges, domains, expiry or limits beyond it answer 403.',
  })
  @ApiCreatedResponse({ type: CreateApiKeyResponseDto })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateApiKeyDto): Promise<CreateApiKeyResponseDto> {
    const { key, secret } = await this.apiKeys.createBy(auth, dto);
    return CreateApiKeyResponseDto.of(key, secret);
  }

  @Post('auth/keys')
  @Auth({ keyTypes: ['admin'], permission: 'keys.manage' })
  @ApiOperation({
    summary: 'Create an API key from permissions',
    description:
      'Like POST /api-keys (never wider than the calling key, whose restrictions it inherits); ' +
      'the key type is usage unless a permission needs an admin key.',
  })
  @ApiCreatedResponse({ type: CreateApiKeyResponseDto })
  async createForPermissions(@CurrentAuth() auth: AuthContext, @Body() dto: CreateAuthKeyDto): Promise<CreateApiKeyResponseDto> {
    const { key, secret } = await this.apiKeys.createForPermissions(auth, dto.name, dto.permissions);
    return CreateApiKeyResponseDto.of(key, secret);
  }

  @Get('api-keys')
  @Auth({ keyTypes: ['admin'], permission: 'keys.manage' })
  @ApiOperation({ summary: 'List the account’s API keys', description: 'Secrets are never listed: see keyPreview.' })
  @ApiOkResponse({ type: ApiKeyListDto })
  async list(@CurrentAuth() auth: AuthContext, @Query() query: ListApiKeysQueryDto): Promise<ApiKeyListDto> {
    const keys = await this.apiKeys.list(auth.accountId, query.keyType);
    return { apiKeys: keys.map(ApiKeyDto.from), count: keys.length };
  }

  @Patch('api-keys/:keyId')
  @Auth({ keyTypes: ['admin'], permission: 'keys.manage' })
  @ApiOperation({
    summary: 'Change an API key',
    description:
      'Changes name, permissions, rateLimit and restrictions; fields left out stay as they are, restrictions are laid ' +
      'over the key’s field by field (null removes one). The key as changed must stay within the calling key, as a new ' +
      'key must (403 naming each field that goes beyond it): a key may narrow itself but never widen itself or another ' +
      'key. keyType and domainScope never change (a public key’s domain is part of its secret). The change reaches ' +
      'every instance at once.',
  })
  @ApiOkResponse({ type: ApiKeyDto, description: 'The key as GET /api-keys lists it' })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiForbiddenResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async update(@CurrentAuth() auth: AuthContext, @Param('keyId') keyId: string, @Body() dto: UpdateApiKeyDto): Promise<ApiKeyDto> {
    return ApiKeyDto.from(await this.apiKeys.update(auth, keyId, dto));
  }

  @Delete('api-keys/:keyId')
  @Auth({ keyTypes: ['admin'], permission: 'keys.manage' })
  @ApiOperation({ summary: 'Delete an API key', description: 'The key stops working on every instance within a second.' })
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async delete(@CurrentAuth() auth: AuthContext, @Param('keyId') keyId: string): Promise<SuccessResponseDto> {
    await this.apiKeys.delete(auth.accountId, keyId);
    return { success: true, message: `API key ${keyId} deleted` };
  }
}
