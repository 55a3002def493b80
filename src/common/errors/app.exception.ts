import { ERROR_STATUS, ErrorCode } from './error-code';

/**
 * The one exception features throw. The global filter renders it as the D-10 body; the status comes from
 * the code, so a code always means the same status everywhere.
 */
export class AppException extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    /** Extra response headers (Retry-After, …). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }

  static notFound(what: string, id?: string): AppException {
    return new AppException(ErrorCode.NotFound, id ? `${what} '${id}' was not found` : `${what} was not found`);
  }

  static validation(fields: { field: string; message: string }[]): AppException {
    const summary = fields.map((f) => `${f.field}: ${f.message}`).join('; ');
    return new AppException(ErrorCode.ValidationFailed, `Request validation failed: ${summary}`, { fields });
  }

  static invalidField(field: string, message: string): AppException {
    return AppException.validation([{ field, message }]);
  }
}
