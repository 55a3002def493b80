import { Logger } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';

/**
 * SQLSTATEs that say the server cannot serve us now, not that the statement was wrong: class 08 (connection
 * exception), 57P01-57P03 (terminated by an administrator or a crash, starting up or shutting down) and 53300
 * (too many connections).
 */
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;

/** Socket errors of connecting to, or talking with, the server. */
const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** node-postgres reports a lost connection, a connect time-out and a full pool's wait without a code. */
const DRIVER_MESSAGES = new RegExp(
  '^(Connection terminated|timeout exceeded when trying to connect|' +
    'Client has encountered a connection error and is not queryable|Client was closed and is not queryable)',
);

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/**
 * Whether a request failed because PostgreSQL cannot be reached (down, restarting, unreachable, or no pool
 * connection within the time-out) rather than because of the request. Looks through TypeORM's QueryFailedError,
 * `cause` chains and AggregateErrors (a connect tried on several addresses).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const pending: unknown[] = [error];
  for (let seen = 0; pending.length > 0 && seen < 10; seen++) {
    const current = pending.pop();
    if (current === null || typeof current !== 'object') continue;
    const { code, message, cause, errors } = current as ErrorLike;
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || SOCKET_ERRORS.has(code))) return true;
    if (typeof message === 'string' && DRIVER_MESSAGES.test(message)) return true;
    if (current instanceof QueryFailedError) pending.push(current.driverError);
    if (cause !== undefined) pending.push(cause);
    if (Array.isArray(errors)) pending.push(...(errors as unknown[]));
  }
  return false;
}

/**
 * Logs a PostgreSQL outage once, at its first failed request, instead of a stack per request; a new pool
 * connection ends it (PostgreSQL accepted one, so it answers again).
 */
export class DatabaseOutage {
  private failedRequests = 0;

  constructor(private readonly logger = new Logger('Database')) {}

  failed(error: unknown): void {
    if (this.failedRequests++ === 0) {
      this.logger.error(`PostgreSQL cannot be reached, answering 503 until it can: ${describe(error)}`);
    }
  }

  connected(): void {
    if (this.failedRequests === 0) return;
    this.logger.log(`PostgreSQL answers again (${this.failedRequests} requests were answered 503)`);
    this.failedRequests = 0;
  }
}

function describe(error: unknown): string {
  const { code, message } = (error ?? {}) as ErrorLike;
  return typeof code === 'string' ? `${String(message)} (${code})` : String(message);
}
