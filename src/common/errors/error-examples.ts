import { ERROR_STATUS, ErrorCode } from './error-code';

/** A typical message of each code, as the API words it: the examples of the OpenAPI document. */
const EXAMPLE_MESSAGES: Record<ErrorCode, string> = {
  [ErrorCode.ValidationFailed]: 'Request validation failed: to: each value in to must be an email',
  [ErrorCode.MalformedJson]: 'The request body is not valid JSON',
  [ErrorCode.AuthMissing]: 'An API key is required: send Authorization: Bearer <key>',
  [ErrorCode.AuthInvalidKey]: 'The API key is invalid',
  [ErrorCode.AuthKeyExpired]: 'The API key has expired',
  [ErrorCode.SignatureInvalid]: 'The signature of this call is missing or does not match',
  [ErrorCode.Forbidden]: 'This key lacks the permission email.send',
  [ErrorCode.IpNotAllowed]: 'This key may not be used from 203.0.113.7',
  [ErrorCode.DomainNotAllowed]: 'This key may not be used for example.org',
  [ErrorCode.DomainNotVerified]: 'The domain example.com is not verified for this account',
  [ErrorCode.OriginNotAllowed]: 'Posts to this form are not accepted from https://elsewhere.example',
  [ErrorCode.ChallengeFailed]: 'The spam challenge was not solved',
  [ErrorCode.NotFound]: "Template 'welcome' was not found",
  [ErrorCode.MethodNotAllowed]: 'PUT is not allowed on /email/send',
  [ErrorCode.Conflict]: 'The domain example.com is already added to this account',
  [ErrorCode.IdempotencyConflict]: 'This Idempotency-Key was used with another request body',
  [ErrorCode.PayloadTooLarge]: 'The request body is too large',
  [ErrorCode.RequestTimeout]: 'The request body did not arrive in time',
  [ErrorCode.RequestHeadersTooLarge]: 'The request headers are too large',
  [ErrorCode.UnsupportedMediaType]: 'Content-Encoding compress is not supported',
  [ErrorCode.InvalidRecipient]: 'The recipient address someone@ is invalid',
  [ErrorCode.AllRecipientsSuppressed]: 'Every recipient is on the suppression list',
  [ErrorCode.RateLimitExceeded]: 'Rate limit exceeded: your account’s plan allows 50 requests per minute; retry in 42 s',
  [ErrorCode.ApiKeyRateLimit]: 'Rate limit exceeded: this API key allows 1000 requests per hour; retry in 1800 s',
  [ErrorCode.IpRateLimit]: 'Rate limit exceeded: your IP address allows 60 requests per minute; retry in 42 s',
  [ErrorCode.EndpointRateLimit]: 'Rate limit exceeded: this endpoint allows 60 requests per minute; retry in 42 s',
  [ErrorCode.AccountQuotaExceeded]: 'Account quota exceeded: 5000 emails per day',
  [ErrorCode.QuotaExceeded]: 'Quota exceeded: 180 emails per month',
  [ErrorCode.Internal]: 'Internal server error',
  [ErrorCode.ServiceUnavailable]: 'The database is unavailable; retry shortly',
};

const RATE_LIMIT_DETAILS = { limit: 1000, remaining: 0, reset_time: '2026-01-01T13:00:00.000Z', retry_after: 1800, scope: 'api-key' };

const EXAMPLE_DETAILS: Partial<Record<ErrorCode, Record<string, unknown>>> = {
  [ErrorCode.ValidationFailed]: { fields: [{ field: 'to', message: 'each value in to must be an email' }] },
  [ErrorCode.RateLimitExceeded]: { ...RATE_LIMIT_DETAILS, limit: 50, retry_after: 42, scope: 'account' },
  [ErrorCode.ApiKeyRateLimit]: RATE_LIMIT_DETAILS,
  [ErrorCode.IpRateLimit]: { ...RATE_LIMIT_DETAILS, limit: 60, retry_after: 42, scope: 'ip' },
  [ErrorCode.EndpointRateLimit]: { ...RATE_LIMIT_DETAILS, limit: 60, retry_after: 42, scope: 'endpoint' },
  [ErrorCode.QuotaExceeded]: {
    ...RATE_LIMIT_DETAILS,
    limit: 180,
    scope: 'account',
    quota: 'emails_per_month',
    window: 'month',
    requested: 1,
  },
};

/** The code an example of this status shows when the response names none: the most common one. */
const USUAL_CODE: Record<number, ErrorCode> = {
  400: ErrorCode.ValidationFailed,
  401: ErrorCode.AuthInvalidKey,
  403: ErrorCode.Forbidden,
  404: ErrorCode.NotFound,
  409: ErrorCode.Conflict,
  429: ErrorCode.ApiKeyRateLimit,
  500: ErrorCode.Internal,
  503: ErrorCode.ServiceUnavailable,
};

/**
 * An error body for the documentation of a `status` response: the first code the response's description names
 * that has this status, else the status's usual code, else any code of that status.
 */
export function errorExample(status: number, description: string, documentation: string): object | undefined {
  const codes = (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((code) => ERROR_STATUS[code] === status);
  const named = codes
    .map((code) => ({ code, at: description.search(new RegExp(`\\b${code}\\b`)) }))
    .filter(({ at }) => at >= 0)
    .sort((a, b) => a.at - b.at)[0]?.code;
  const code = named ?? USUAL_CODE[status] ?? codes[0];
  if (!code) return undefined;
  const details = EXAMPLE_DETAILS[code];
  return { error: { code, message: EXAMPLE_MESSAGES[code], ...(details && { details }) }, documentation };
}
