import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { OperatorAccess, type OperatorRequirement } from './operator-access';

/**
 * /metrics, on the API and on a worker's probe port: an operator admin key holding operator.metrics (basic auth
 * password or bearer), or the METRICS_TOKEN bearer.
 */
export const METRICS_ACCESS: OperatorRequirement = {
  realm: 'Mailroom metrics',
  permissions: () => ['operator.metrics'],
  acceptMetricsToken: true,
};

@Injectable()
export class MetricsAccessGuard implements CanActivate {
  constructor(private readonly access: OperatorAccess) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    await this.access.authorize(http.getRequest<Request>(), http.getResponse<Response>(), METRICS_ACCESS);
    return true;
  }
}
