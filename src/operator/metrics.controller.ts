import { Controller, Get, Header, Res, UseGuards } from '@nestjs/common';
import { ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { MetricsAccessGuard } from './metrics-access.guard';
import { MetricsService } from '../metrics/metrics.service';

@ApiTags('Operations')
@Controller('metrics')
@Public()
@UseGuards(MetricsAccessGuard)
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @ApiOperation({
    operationId: 'getMetrics',
    summary: 'Prometheus metrics of this process',
    description:
      'An admin key of the operator account holding `operator.metrics`, as the password of HTTP basic auth or as ' +
      '`Authorization: Bearer <key>`; or `Authorization: Bearer <METRICS_TOKEN>`. The key’s IP allowlist and expiry apply. ' +
      'Each process reports its own counters; queue depths come from Redis and are the same on every process.',
  })
  @ApiSecurity('OperatorBasic')
  @ApiSecurity('BearerKey')
  @ApiSecurity('MetricsToken')
  @ApiOkResponse({
    description: 'Prometheus text exposition format 0.0.4',
    content: {
      'text/plain': {
        schema: { type: 'string' },
        example: '# HELP mailroom_emails_total …\n# TYPE mailroom_emails_total counter\nmailroom_emails_total{status="sent"} 42\n',
      },
    },
  })
  @ApiUnauthorizedResponse({ description: 'No credential, an unknown key or token, or an expired key', type: ErrorBodyDto })
  @ApiForbiddenResponse({
    description: 'Not an admin key of the operator account, without operator.metrics, or from an address outside its IP allowlist',
    type: ErrorBodyDto,
  })
  @Header('Cache-Control', 'no-store')
  async scrape(@Res() response: Response): Promise<void> {
    response.type(this.metrics.contentType).send(await this.metrics.render());
  }
}
