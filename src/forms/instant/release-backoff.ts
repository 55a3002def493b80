/** The wait after a held submission's first failed release; doubled after each further one. */
export const FIRST_RETRY_MS = 60_000;
/** The longest wait between two tries. */
export const LONGEST_RETRY_MS = 6 * 60 * 60_000;
/** Submissions remembered at most (the oldest forgotten first): a forgotten one is tried at the next sweep. */
export const MAX_REMEMBERED = 1000;

/**
 * The held submissions whose emails could not be made (a template gone, a sender refused), in this process: each is
 * left out of releases for a while, longer after each failure, so the sweep neither tries it every minute nor logs an
 * error for it every minute, while a cause fixed by the owner still lets it go out later.
 */
export class ReleaseBackoff {
  private readonly failures = new Map<string, { count: number; retryAt: number }>();

  /** Records a failed release; whether it is the submission's first (worth an error in the log). */
  failed(submissionId: string, nowMs: number): boolean {
    const count = (this.failures.get(submissionId)?.count ?? 0) + 1;
    this.failures.delete(submissionId);
    if (this.failures.size >= MAX_REMEMBERED) this.failures.delete(this.failures.keys().next().value!);
    const waitMs = Math.min(FIRST_RETRY_MS * 2 ** (count - 1), LONGEST_RETRY_MS);
    this.failures.set(submissionId, { count, retryAt: nowMs + waitMs });
    return count === 1;
  }

  /** Its emails were made: it is tried as any other from now on. */
  succeeded(submissionId: string): void {
    this.failures.delete(submissionId);
  }

  /** The submissions to leave out of a release now. */
  waiting(nowMs: number): string[] {
    return [...this.failures].filter(([, { retryAt }]) => retryAt > nowMs).map(([id]) => id);
  }
}
