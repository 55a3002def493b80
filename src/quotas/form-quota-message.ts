import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';

const MAX_MESSAGE_LENGTH = 1000;

/**
 * A form post refused by an account quota (the plan's submissions per hour or day, its emails per month, which
 * the post's notification and acknowledgment count against, or global_limits) says the form's own
 * `rate_limiting.messages.global_limited` text when the form has one (spec "Form submission limits"); the
 * code, details and Retry-After stay. Anything else is returned as it is.
 */
export function withFormQuotaMessage(err: unknown, rateLimiting: Record<string, unknown> | undefined): unknown {
  if (!(err instanceof AppException) || (err.code !== ErrorCode.QuotaExceeded && err.code !== ErrorCode.AccountQuotaExceeded)) return err;
  const messages = rateLimiting?.messages;
  const text = messages && typeof messages === 'object' ? (messages as Record<string, unknown>).global_limited : undefined;
  if (typeof text !== 'string' || text.trim() === '') return err;
  return new AppException(err.code, text.trim().slice(0, MAX_MESSAGE_LENGTH), err.details, err.headers);
}
