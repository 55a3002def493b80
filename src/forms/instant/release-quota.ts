import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { MessageWithEvents, recipientCount } from '../../outbox/acceptance.repository';

/** How many of the releases, oldest first, fit in `room` emails. */
export function fittingCount(releases: { messages: MessageWithEvents[] }[], room: number): number {
  let used = 0;
  for (let i = 0; i < releases.length; i++) {
    used += recipientCount(releases[i].messages);
    if (used > room) return i;
  }
  return releases.length;
}

/** An account quota's 429: the confirmation stands, the mail waits. */
export function quotaRefusal(err: unknown): AppException | null {
  return err instanceof AppException && (err.code === ErrorCode.QuotaExceeded || err.code === ErrorCode.AccountQuotaExceeded) ? err : null;
}

/** What the refusing quota still had room for (its 429's details). */
export function roomLeft(refusal: AppException): number {
  const remaining = refusal.details?.remaining;
  return typeof remaining === 'number' ? remaining : 0;
}

/** When the refusing quota has room again. */
export function resetOf(refusal: AppException): Date | null {
  const reset = refusal.details?.reset_time;
  return typeof reset === 'string' ? new Date(reset) : null;
}
