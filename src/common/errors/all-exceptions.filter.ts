import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { AppConfigService } from '../../config/app-config.service';
import { BODY_TOO_DEEP } from '../body-depth';
import { AppException } from './app.exception';
import { DatabaseOutage, isDatabaseUnavailable } from './database-unavailable';
import { ErrorCode } from './error-code';

const STATUS_CODES: Partial<Record<number, ErrorCode>> = {
  [HttpStatus.BAD_REQUEST]: ErrorCode.ValidationFailed,
  [HttpStatus.UNAUTHORIZED]: ErrorCode.AuthMissing,
  [HttpStatus.FORBIDDEN]: ErrorCode.Forbidden,
  [HttpStatus.NOT_FOUND]: ErrorCode.NotFound,
  [HttpStatus.METHOD_NOT_ALLOWED]: ErrorCode.MethodNotAllowed,
  [HttpStatus.CONFLICT]: ErrorCode.Conflict,
  [HttpStatus.PAYLOAD_TOO_LARGE]: ErrorCode.PayloadTooLarge,
  [HttpStatus.UNSUPPORTED_MEDIA_TYPE]: ErrorCode.UnsupportedMediaType,
  [HttpStatus.TOO_MANY_REQUESTS]: ErrorCode.RateLimitExceeded,
  [HttpStatus.SERVICE_UNAVAILABLE]: ErrorCode.ServiceUnavailable,
};

/** zlib's codes: `Z_DATA_ERROR`, `Z_BUF_ERROR` (truncated), brotli's `ERR__ERROR_FORMAT_…`. */
const DECOMPRESSION_ERROR = /^(Z_|ERR__ERROR|ERR_BROTLI)/;

/**
 * body-parser's errors carry `type` and `status`. They must be recognised before Nest's router maps a
 * SyntaxError into a plain BadRequestException, so app.setup.ts also calls this right after the parsers.
 */
export function bodyParserError(error: unknown): AppException | null {
  if (error instanceof AppException) return null; // ours already (the limiter's, the body gate's)
  const { type, status, expose, code } = (error ?? {}) as { type?: string; status?: number; expose?: boolean; code?: unknown };
  if (type === 'entity.parse.failed') return new AppException(ErrorCode.MalformedJson, 'The request body is not valid JSON');
  if (type === 'entity.too.large' || status === 413) {
    return new AppException(ErrorCode.PayloadTooLarge, 'The request body is too large');
  }
  if (type === 'charset.unsupported' || type === 'encoding.unsupported') {
    return new AppException(ErrorCode.UnsupportedMediaType, (error as Error).message);
  }
  // Ours for JSON (body-depth.ts), qs's for url-encoded bodies: one limit, one answer.
  if (type === 'entity.too.deep' || type === 'querystring.parse.rangeError') {
    return new AppException(ErrorCode.ValidationFailed, BODY_TOO_DEEP);
  }
  if (status === 400 && typeof code === 'string' && DECOMPRESSION_ERROR.test(code)) {
    return new AppException(ErrorCode.ValidationFailed, 'The request body is not valid for its Content-Encoding');
  }
  if (type && expose && typeof status === 'number' && status < 500) {
    return new AppException(ErrorCode.ValidationFailed, (error as Error).message);
  }
  return null;
}

/**
 * Answers with the D-10 body: the filter's answer, and the body gate's when it cuts a body that is still arriving
 * (the request has left the middleware chain by then).
 */
export function writeErrorBody(response: Response, error: AppException, documentation: string): void {
  for (const [name, value] of Object.entries(error.headers ?? {})) response.setHeader(name, value);
  // A route may have set its own type already (an HTML page, a CSV file): errors are always the JSON body.
  response.removeHeader('Content-Disposition');
  response.setHeader('Content-Type', 'application/json; charset=utf-8');
  response.status(error.status).json({
    error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
    documentation,
  });
}

/** The one place every error becomes the D-10 body: ours, Nest's, body-parser's and the unknown. */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  constructor(
    private readonly config: AppConfigService,
    private readonly databaseOutage = new DatabaseOutage(),
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const request = http.getRequest<Request>();
    const error = this.toAppException(exception, request);

    if (response.headersSent) return;
    writeErrorBody(response, error, `${this.config.publicUrl}/docs#errors`);
  }

  private toAppException(exception: unknown, request: Request): AppException {
    if (exception instanceof AppException) return exception;

    const bodyError = bodyParserError(exception);
    if (bodyError) return bodyError;

    if (exception instanceof ThrottlerException) {
      return new AppException(ErrorCode.RateLimitExceeded, 'Rate limit exceeded');
    }
    if (exception instanceof HttpException) {
      const status: HttpStatus = exception.getStatus();
      const code = STATUS_CODES[status];
      if (code && (status < HttpStatus.INTERNAL_SERVER_ERROR || status === HttpStatus.SERVICE_UNAVAILABLE)) {
        const message = status === HttpStatus.NOT_FOUND ? `No route ${request.method} ${request.path}` : exception.message;
        return new AppException(code, message);
      }
    }

    // After Nest's own exceptions: one that carries a database error as its `cause` keeps its status.
    if (isDatabaseUnavailable(exception)) {
      this.databaseOutage.failed(exception);
      return new AppException(ErrorCode.ServiceUnavailable, 'The database is unavailable; retry shortly', undefined, {
        'Retry-After': '1',
      });
    }

    this.logger.error({ err: exception, requestId: request.id, method: request.method, path: request.path }, 'Unhandled error');
    return new AppException(ErrorCode.Internal, 'Internal server error');
  }
}
