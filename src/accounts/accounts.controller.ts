import { Body, Controller, Get, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyDto } from '../api-keys/dto/api-key-response.dto';
import { Auth } from '../common/auth/auth.decorator';
import { AccountsService } from './accounts.service';
import { AccountDto, AccountListDto, CreateAccountDto, CreateAccountResponseDto } from './dto/account.dto';

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
}
