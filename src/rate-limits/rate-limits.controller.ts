import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { RateLimitService } from './rate-limit.service';
import type { LimitState } from './rate-limit.types';
import { LimitCounterDto, LimitScopeStateDto, RateLimitsDto, RateLimitStatusDto } from './dto/rate-limit-status.dto';

const UNCOUNTED = 'These calls are not counted against any limit.';

@ApiTags('Rate limits')
@Controller('rate-limits')
@Auth({ keyTypes: ['admin', 'usage', 'public'] })
export class RateLimitsController {
  constructor(private readonly limits: RateLimitService) {}

  @Get()
  @ApiOperation({ summary: 'The calling key’s hourly and per-minute limits', description: UNCOUNTED })
  @ApiOkResponse({ type: RateLimitsDto })
  async get(@CurrentAuth() auth: AuthContext): Promise<RateLimitsDto> {
    const { scopes } = await this.limits.limitsOf(auth);
    const tightestOf = (window: LimitState['rule']['window']) =>
      scopes
        .filter((s) => s.rule.window === window)
        .reduce<LimitState | null>((a, b) => (a === null || b.remaining < a.remaining ? b : a), null);
    return {
      rate_limits: {
        requests_per_hour: LimitCounterDto.from(tightestOf('hour')),
        requests_per_minute: LimitCounterDto.from(tightestOf('minute')),
      },
    };
  }

  @Get('status')
  @ApiOperation({
    summary: 'Every limit that applies to the caller',
    description: `The key’s own limits, the account plan’s, and each endpoint’s (counted per account). ${UNCOUNTED}`,
  })
  @ApiOkResponse({ type: RateLimitStatusDto })
  async status(@CurrentAuth() auth: AuthContext): Promise<RateLimitStatusDto> {
    const limits = await this.limits.limitsOf(auth);
    return {
      plan: limits.plan,
      plan_limits: limits.planLimits,
      exempt: limits.exempt,
      multiplier: limits.multiplier,
      scopes: limits.scopes.map((s) => LimitScopeStateDto.fromState(s)),
      endpoints: limits.endpoints.map((s) => LimitScopeStateDto.fromState(s)),
    };
  }
}
