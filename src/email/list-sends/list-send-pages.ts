import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import type { MessageWithEvents } from '../../outbox/acceptance.repository';

/** What became of one subscriber of a page, in address order. */
export type SubscriberOutcome = { email: string; message: MessageWithEvents } | { email: string; skipped: 'suppressed' | 'failed' };

/** The part of a page that commits: its messages, the subscribers it skipped, and the address it reached. */
export interface PageProgress {
  messages: MessageWithEvents[];
  suppressed: number;
  failed: number;
  /** The last address it reached; null: none (the cursor stays). */
  cursor: string | null;
}

/**
 * The page up to its `maxMessages`-th message (all of it when it has no more): a send that may make only that
 * many stops right after the last one it makes, and the subscribers past it are neither made nor skipped.
 */
export function pageProgress(outcomes: readonly SubscriberOutcome[], maxMessages = Infinity): PageProgress {
  const progress: PageProgress = { messages: [], suppressed: 0, failed: 0, cursor: null };
  let end = outcomes.length;
  if (maxMessages < Infinity) {
    let made = 0;
    end = 0;
    while (end < outcomes.length && made < maxMessages) if ('message' in outcomes[end++]) made++;
    if (made < maxMessages) end = outcomes.length;
  }
  for (const outcome of outcomes.slice(0, end)) {
    if ('message' in outcome) progress.messages.push(outcome.message);
    else progress[outcome.skipped]++;
    progress.cursor = outcome.email;
  }
  return progress;
}

/** A quota's 429 (QUOTA_EXCEEDED, ACCOUNT_QUOTA_EXCEEDED): which quota refused and what it has left; null for any other error. */
export function quotaRefusalOf(err: unknown): { quota: string; remaining: number } | null {
  if (!(err instanceof AppException)) return null;
  if (err.code !== ErrorCode.QuotaExceeded && err.code !== ErrorCode.AccountQuotaExceeded) return null;
  const { quota, remaining } = err.details ?? {};
  if (typeof quota !== 'string' || typeof remaining !== 'number') return null;
  return { quota, remaining };
}
