import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { OperatorAccess } from '../common/auth/operator-access';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';

export const METRICS_REALM = 'Mailroom metrics';

/** /metrics: an operator admin key by basic auth, or the METRICS_TOKEN bearer. */
@Injectable()
export class MetricsAccessGuard implements CanActivate {
  constructor(private readonly access: OperatorAccess) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const response = http.getResponse<Response>();
    if (await this.access.allows(http.getRequest<Request>(), response, { acceptMetricsToken: true })) return true;
    response.set('WWW-Authenticate', `Basic realm="${METRICS_REALM}", charset="UTF-8"`);
    throw new AppException(
      ErrorCode.AuthMissing,
      'Sign in with any user name and an operator admin key as the password, or send the METRICS_TOKEN bearer',
    );
  }
}
