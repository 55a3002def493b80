import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { ResolvedKey } from '../auth/api-key.cache';
import { AppConfigService } from '../config/app-config.service';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { RateLimitService } from '../rate-limits/rate-limit.service';
import { checkKeyAccess, checkNotExpired, checkRestrictions } from '../auth/key-checks';
import type { Permission } from '../auth/permissions';

/** What one of the operator's pages asks of the caller. */
export interface OperatorRequirement {
  /** Named in the WWW-Authenticate challenge of a 401, so that a browser asks for the password. */
  realm: string;
  /** The permissions the key must hold for this request (all of them). */
  permissions: (request: Request) => readonly Permission[];
  /** `Authorization: Bearer <METRICS_TOKEN>` passes too (what Prometheus sends). */
  acceptMetricsToken?: boolean;
}

/** Who was let in: an operator key, or the METRICS_TOKEN. */
export type OperatorCaller = { kind: 'key'; key: ResolvedKey } | { kind: 'metrics-token' };

/**
 * The operator's pages outside the API (Bull Board, /metrics). The key comes as the password of HTTP basic
 * auth (any user name: what a browser asks for) or as `Authorization: Bearer <key>`; it must be an admin key
 * of the operator account and passes every check an API route makes: expiry (401 AUTH_KEY_EXPIRED), IP
 * allowlist (403 IP_NOT_ALLOWED), domain restrictions, and the page's operator.* permission (403 FORBIDDEN).
 */
@Injectable()
export class OperatorAccess {
  constructor(
    private readonly limiter: RateLimitService,
    private readonly config: AppConfigService,
  ) {}

  /**
   * The caller if it may make this request, else an AppException (a 401 carries the WWW-Authenticate
   * challenge). A wrong key counts against the client IP's failed-authentication budget (429 once used
   * up); a malformed one costs no database lookup. Known keys are not counted (Bull Board polls).
   */
  async authorize(request: Request, response: Response, requirement: OperatorRequirement): Promise<OperatorCaller> {
    try {
      return await this.check(request, response, requirement);
    } catch (err) {
      if (err instanceof AppException && err.status === 401) {
        throw new AppException(err.code, err.message, err.details, { ...err.headers, 'WWW-Authenticate': challenge(requirement.realm) });
      }
      throw err;
    }
  }

  /** Express middleware: lets the caller through, answers everyone else in the D-10 body. */
  middleware(requirement: OperatorRequirement): RequestHandler {
    return (request: Request, response: Response, next: NextFunction) => {
      this.authorize(request, response, requirement).then(
        () => next(),
        (err: unknown) => (err instanceof AppException ? this.send(response, err) : next(err)),
      );
    };
  }

  private async check(request: Request, response: Response, requirement: OperatorRequirement): Promise<OperatorCaller> {
    const secret = presentedSecret(request);
    if (secret === null) {
      throw new AppException(ErrorCode.AuthMissing, 'Sign in with any user name and an operator admin key as the password');
    }
    const token = this.config.env.METRICS_TOKEN;
    if (requirement.acceptMetricsToken && token && sameSecret(secret, token)) return { kind: 'metrics-token' };

    const key = await this.limiter.resolveCredential(request, secret, response);
    if (key === null) {
      await this.limiter.countAuthFailure(request, response);
      throw new AppException(ErrorCode.AuthInvalidKey, 'The API key is invalid');
    }
    checkNotExpired(key);
    checkRestrictions(key, request);
    checkKeyAccess(key, { keyTypes: ['admin'], operator: true, permissions: requirement.permissions(request) });
    return { kind: 'key', key };
  }

  /** The D-10 body, also where no Nest exception filter runs (a worker's probe server). */
  private send(response: Response, error: AppException): void {
    if (response.headersSent) return;
    response
      .status(error.status)
      .set(error.headers ?? {})
      .json({
        error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
        documentation: `${this.config.publicUrl}/docs#errors`,
      });
  }
}

function challenge(realm: string): string {
  return `Basic realm="${realm}", charset="UTF-8"`;
}

/** The password of basic auth, or the bearer token; null when the request carries neither. */
function presentedSecret(request: Request): string | null {
  const authorization = request.headers.authorization ?? '';
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+(\S+)\s*$/i.exec(authorization);
  if (!basic) return null;
  const password = Buffer.from(basic[1], 'base64').toString('utf8').split(':').slice(1).join(':');
  return password || null;
}

/** Constant-time comparison of two secrets of any length. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
