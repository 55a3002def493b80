import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppConfigService } from '../../config/app-config.service';
import { ErrorCode } from '../errors/error-code';
import { RateLimitService } from '../rate-limit/rate-limit.service';

/**
 * The operator's pages outside the API (Bull Board, /metrics): HTTP basic auth whose password is an operator
 * admin key (D-34), or for /metrics also `Authorization: Bearer <METRICS_TOKEN>`, which Prometheus sends.
 */
@Injectable()
export class OperatorAccess {
  constructor(
    private readonly limiter: RateLimitService,
    private readonly config: AppConfigService,
  ) {}

  /**
   * A wrong password counts against the client IP's failed-authentication budget (429 once used up); a
   * malformed one costs no database lookup. Signed-in requests are not counted (Bull Board polls).
   */
  async allows(request: Request, response: Response, options: { acceptMetricsToken?: boolean } = {}): Promise<boolean> {
    const authorization = request.headers.authorization ?? '';
    const token = this.config.env.METRICS_TOKEN;
    const bearer = /^Bearer\s+(\S+)$/i.exec(authorization);
    if (options.acceptMetricsToken && token && bearer) {
      if (sameSecret(bearer[1], token)) return true;
      await this.limiter.countAuthFailure(request, response);
      return false;
    }
    const basic = /^Basic\s+(\S+)$/i.exec(authorization);
    const password = basic ? Buffer.from(basic[1], 'base64').toString('utf8').split(':').slice(1).join(':') : '';
    const key = password ? await this.limiter.resolveCredential(request, password, response) : undefined;
    if (key === null) await this.limiter.countAuthFailure(request, response);
    return key != null && key.keyType === 'admin' && key.isOperator && (key.expiresAt === null || key.expiresAt > Date.now());
  }

  /** The 401 (D-10 body) that makes a browser ask for the basic-auth password. */
  refuse(response: Response, realm: string): void {
    response
      .status(401)
      .set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`)
      .json({
        error: { code: ErrorCode.AuthMissing, message: 'Sign in with any user name and an operator admin key as the password' },
        documentation: `${this.config.publicUrl}/docs#errors`,
      });
  }

  /** Express middleware: passes operators on, refuses everyone else. */
  middleware(realm: string, options: { acceptMetricsToken?: boolean } = {}): RequestHandler {
    return (request: Request, response: Response, next: NextFunction) => {
      this.allows(request, response, options).then(
        (allowed) => (allowed ? next() : this.refuse(response, realm)),
        (err: unknown) => next(err),
      );
    };
  }
}

/** Constant-time comparison of two secrets of any length. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
