import { Body, Controller, Get, Param, Patch, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyDto } from '../api-keys/dto/api-key-response.dto';
import { Auth } from '../auth/auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { AccountsService } from './accounts.service';
import {
  AccountDetailsDto,
  AccountDto,
  AccountListDto,
  CreateAccountDto,
  CreateAccountResponseDto,
  UpdateAccountDto,
} from './dto/account.dto';

@ApiTags('Admin')
@Controller('admin/accounts')
@Auth({ keyTypes: ['admin'], permission: 'keys.manage', operator: true })
export class AccountsController {
  constructor(private readonly accounts: AccountsService) {}

  @Post()
  @ApiOperation({ summary: 'Create a tenant account', description: 'Operator only. Returns the account’s first admin key once.' })
  @ApiCreatedResponse({ type: CreateAccountResponseDto })
  async create(@Body() dto: CreateAccountDto): Promise<CreateAccountResponseDto> {
    const { account, key, secret } = await this.accounts.create(dto.name, dto.tier);
    return {
      success: true,
      account: AccountDto.from(account),
      apiKey: { ...ApiKeyDto.from(key), key: secret },
      securityNote: 'Store this key securely: it is shown only once and cannot be recovered.',
    };
  }

  @Get()
  @ApiOperation({ summary: 'List accounts', description: 'Operator only.' })
  @ApiOkResponse({ type: AccountListDto })
  async list(): Promise<AccountListDto> {
    const accounts = await this.accounts.list();
    return { accounts: accounts.map(AccountDto.from), count: accounts.length };
  }

  @Patch(':accountId')
  @ApiOperation({
    summary: 'Set an account’s tier, request limits and quotas',
    description:
      'Operator only. limits (settings.limits) and quotas (settings.quotas) are laid over the plan’s field by field: ' +
      'a number sets a field, null removes it, a field left out is kept. Takes effect at once on this instance, within 30 s on others. ' +
      'billingSelfService lets the account’s own admin keys subscribe it to a plan.',
  })
  @ApiOkResponse({ type: AccountDetailsDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async update(@Param('accountId') accountId: string, @Body() dto: UpdateAccountDto): Promise<AccountDetailsDto> {
    return AccountDetailsDto.fromAccount(await this.accounts.update(accountId, dto));
  }
}
