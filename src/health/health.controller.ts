import { Controller, Get, HttpStatus, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { Public } from '../common/auth/auth.decorator';
import { RedisService } from '../redis/redis.service';

@ApiTags('Health')
@Controller('health')
@Public()
export class HealthController {
  constructor(
    private readonly dataSource: DataSource,
    private readonly redis: RedisService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Liveness: the process answers' })
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  live(): { status: string } {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({ summary: 'Readiness: PostgreSQL and Redis answer' })
  @ApiOkResponse({ schema: { example: { status: 'ok', checks: { postgres: 'up', redis: 'up' } } } })
  @ApiServiceUnavailableResponse({ schema: { example: { status: 'unavailable', checks: { postgres: 'up', redis: 'down' } } } })
  async ready(@Res({ passthrough: true }) response: Response) {
    const [postgres, redis] = await Promise.all([
      this.dataSource.query('SELECT 1').then(
        () => true,
        () => false,
      ),
      this.redis.ping(),
    ]);
    const ok = postgres && redis;
    response.status(ok ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return {
      status: ok ? 'ok' : 'unavailable',
      checks: { postgres: postgres ? 'up' : 'down', redis: redis ? 'up' : 'down' },
    };
  }
}
