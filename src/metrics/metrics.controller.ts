import { Controller, Get, Header, Res, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/auth/auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { MetricsAccessGuard } from './metrics-access.guard';
import { MetricsService } from './metrics.service';

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
      'HTTP basic auth with an operator admin key as the password, or `Authorization: Bearer <METRICS_TOKEN>`. ' +
      'Each process reports its own counters; queue depths come from Redis and are the same on every process.',
  })
  @ApiSecurity('OperatorBasic')
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
  @ApiUnauthorizedResponse({ description: 'No operator credential or METRICS_TOKEN', type: ErrorBodyDto })
  @Header('Cache-Control', 'no-store')
  async scrape(@Res() response: Response): Promise<void> {
    response.type(this.metrics.contentType).send(await this.metrics.render());
  }
}
