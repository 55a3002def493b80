import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../common/auth/auth-context';
import { Auth } from '../common/auth/auth.decorator';
import { CurrentAuth } from '../common/auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { SuccessResponseDto } from '../common/http/success-response.dto';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyDto, ApiKeyListDto, CreateApiKeyResponseDto } from './dto/api-key-response.dto';
import { CreateApiKeyDto, CreateAuthKeyDto, ListApiKeysQueryDto } from './dto/create-api-key.dto';

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
