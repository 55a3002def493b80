import { Controller, Get, HttpStatus, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { Public } from '../common/auth/auth.decorator';
import { ProviderHealth } from '../email/provider-health';
import { RedisService } from '../redis/redis.service';

@ApiTags('Health')
@Controller('health')
@Public()
export class HealthController {
  constructor(
    private readonly dataSource: DataSource,
    private readonly redis: RedisService,
    private readonly provider: ProviderHealth,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Liveness: the process answers' })
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  live(): { status: string } {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'Readiness: PostgreSQL and Redis answer, and the SMTP provider is not failing whole transactions',
    description:
      '`provider` is `down` while the workers see the SMTP provider fail whole transactions (authentication, a refusal ' +
      'at MAIL FROM or DATA, TLS, no connection), as every instance sees it; it is `up` again after the next ' +
      'message the provider takes. Messages meanwhile are deferred and retried.',
  })
  @ApiOkResponse({ schema: { example: { status: 'ok', checks: { postgres: 'up', redis: 'up', provider: 'up' } } } })
  @ApiServiceUnavailableResponse({
    schema: { example: { status: 'unavailable', checks: { postgres: 'up', redis: 'up', provider: 'down' } } },
  })
  async ready(@Res({ passthrough: true }) response: Response) {
    const [postgres, redis, provider] = await Promise.all([
      this.dataSource.query('SELECT 1').then(
        () => true,
        () => false,
      ),
      this.redis.ping(),
      this.provider.state(),
    ]);
    const ok = postgres && redis && provider === 'up';
    response.status(ok ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return {
      status: ok ? 'ok' : 'unavailable',
      checks: { postgres: postgres ? 'up' : 'down', redis: redis ? 'up' : 'down', provider },
    };
  }
}
