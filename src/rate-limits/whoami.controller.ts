import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from '../common/errors/error-body';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { WhoamiDto } from './dto/whoami.dto';

@ApiTags('Auth')
@Controller('auth')
export class WhoamiController {
  @Get('whoami')
  @Auth({ keyTypes: ['admin', 'usage', 'public'] })
  @ApiOperation({ summary: 'The key this request was made with', description: 'Its account, type, permissions and domain scope.' })
  @ApiOkResponse({ type: WhoamiDto })
  @ApiTooManyRequestsResponse({ description: 'A rate limit of the key, its account or its client IP', type: ErrorBodyDto })
  whoami(@CurrentAuth() auth: AuthContext): WhoamiDto {
    return {
      accountId: auth.accountId,
      keyId: auth.keyId,
      keyType: auth.keyType,
      permissions: [...auth.permissions],
      domainScope: auth.domainScope,
      plan: auth.accountTier,
    };
  }
}
