import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { AccountSettingsService } from './account-settings.service';
import { AccountSettingsDto, UpdateAccountSettingsDto } from './dto/account-settings.dto';

const WINDOWS = 'Windows are UTC calendar hours, days and months; usage counts what was accepted.';

@ApiTags('Settings')
@Controller('settings')
export class AccountSettingsController {
  constructor(private readonly settings: AccountSettingsService) {}

  @Get()
  @Auth({ keyTypes: ['admin'] })
  @ApiOperation({ summary: 'The account’s settings, and every quota with its current usage', description: WINDOWS })
  @ApiOkResponse({ type: AccountSettingsDto })
  get(@CurrentAuth() auth: AuthContext): Promise<AccountSettingsDto> {
    return this.settings.get(auth.accountId);
  }

  @Patch()
  @Auth({ keyTypes: ['admin'], permission: 'settings.write' })
  @ApiOperation({
    summary: 'Change the account’s global_limits',
    description: `Fields left out are kept; null removes a limit. Answers like GET /settings. ${WINDOWS}`,
  })
  @ApiOkResponse({ type: AccountSettingsDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'A limit that is not a positive integer, or an unknown field' })
  update(@CurrentAuth() auth: AuthContext, @Body() dto: UpdateAccountSettingsDto): Promise<AccountSettingsDto> {
    return this.settings.update(auth.accountId, dto);
  }
}
