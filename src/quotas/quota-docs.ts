import { ApiTooManyRequestsResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from '../common/errors/error-body';

/** Swagger for routes that accept metered work (sends, form posts): the quota 429s (D-13). */
export const QUOTA_429_DESCRIPTION =
  'QUOTA_EXCEEDED (the plan’s emails per month or form submissions per hour/day; forwarded mail has its own quota) or ACCOUNT_QUOTA_EXCEEDED (the account’s ' +
  'global_limits): the request is refused whole, nothing is stored or sent. details: limit, remaining, reset_time, retry_after, ' +
  'scope, quota, window, requested; Retry-After gives the seconds until the window resets. GET /settings shows every quota.';

export function ApiQuotaExceededResponse(): MethodDecorator & ClassDecorator {
  return ApiTooManyRequestsResponse({ type: ErrorBodyDto, description: QUOTA_429_DESCRIPTION });
}
