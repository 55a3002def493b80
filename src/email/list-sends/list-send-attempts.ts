import { AppException } from '../../common/errors/app.exception';

/** A fan-out stopped after a page because its worker is shutting down: a retry goes on, and the run is not counted. */
export class FanOutInterrupted extends Error {}

/** The run that failed a list send for good: its job goes to the failed set, whatever attempts Bull has left for it. */
export class ListSendFailed extends Error {}

/** What a list send's reader is told when a run failed with an error that is not theirs to read. */
export const INTERNAL_FAILURE = 'internal error while making its messages (details in the server log)';

/**
 * What GET of the list send says about a failed run: a refusal of ours (AppException) as it was worded; any other
 * error (the database, Redis) without its internals, which the server log and the failed job in Bull Board keep.
 */
export function failureDescription(err: unknown): string {
  return err instanceof AppException ? err.message : INTERNAL_FAILURE;
}

/**
 * Bull attempts for a job added after `attemptsMade` runs: what the send has left of `maxAttempts`, at least one
 * (a send that has none is failed by the run, or by the sweeper, instead).
 */
export function jobAttemptsLeft(maxAttempts: number, attemptsMade: number): number {
  return Math.max(1, maxAttempts - attemptsMade);
}

/** Why a send whose runs never ended (their worker died, their job was lost each time) is given up. */
export function gaveUpReason(attempts: number, lastError: string | null): string {
  return `gave up after ${attempts} attempts: ${lastError ?? 'its runs never finished'}`;
}
