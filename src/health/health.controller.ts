import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/auth.decorator';
import { HealthService, Readiness, readinessStatusCode } from './health.service';

const CHECK_STATE = { type: 'string', enum: ['up', 'down', 'degraded'] };
const READINESS_SCHEMA = {
  type: 'object',
  required: ['status', 'checks', 'details'],
  properties: {
    status: { type: 'string', enum: ['ok', 'degraded', 'unavailable', 'shutting_down'] },
    checks: {
      type: 'object',
      properties: { postgres: CHECK_STATE, redis: CHECK_STATE, provider: CHECK_STATE, workers: CHECK_STATE },
    },
    details: { type: 'object', additionalProperties: { type: 'object' }, description: "Each check's state and what it found" },
  },
};

@ApiTags('Health')
@Controller('health')
@Public()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({ operationId: 'getLiveness', summary: 'Liveness: the process answers' })
  @ApiOkResponse({
    schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } }, example: { status: 'ok' } },
  })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    operationId: 'getReadiness',
    summary: 'Readiness: PostgreSQL, Redis, the SMTP provider and the queue workers',
    description:
      '`provider` is `down` while the workers see the SMTP provider fail whole transactions (authentication, a refusal ' +
      'at MAIL FROM or DATA, TLS, no connection) or refuse recipients by policy (a 5.7.x, 5.3.x, 5.4.x or 5.5.x answer to ' +
      "RCPT TO: relaying denied, sending paused), as every instance sees it, with the provider's answer as `reason`; it is " +
      '`up` again after the next message the provider takes. Messages meanwhile are deferred and retried (refused ' +
      'recipients fail, unsuppressed). `workers` is `degraded` on an API-only process ' +
      'while no queue worker is connected (the process stays ready: accepted messages wait in the queue). From SIGTERM ' +
      'on, the answer is 503 `shutting_down`.',
  })
  @ApiOkResponse({
    schema: {
      ...READINESS_SCHEMA,
      example: {
        status: 'ok',
        checks: { postgres: 'up', redis: 'up', provider: 'up', workers: 'up' },
        details: {
          postgres: { status: 'up' },
          redis: { status: 'up' },
          provider: { status: 'up' },
          workers: { status: 'up', connected: 2 },
        },
      },
    },
  })
  @ApiServiceUnavailableResponse({
    description: 'A store or the provider is down, or the process is shutting down',
    schema: {
      ...READINESS_SCHEMA,
      example: {
        status: 'unavailable',
        checks: { postgres: 'up', redis: 'down', provider: 'up', workers: 'up' },
        details: {
          postgres: { status: 'up' },
          redis: { status: 'down', message: 'Redis does not answer PING' },
          provider: { status: 'up' },
          workers: { status: 'up', connected: 0 },
        },
      },
    },
  })
  async ready(@Res({ passthrough: true }) response: Response): Promise<Readiness> {
    const readiness = await this.health.readiness();
    response.status(readinessStatusCode(readiness));
    return readiness;
  }
}
