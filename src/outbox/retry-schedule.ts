/**
 * The D-20 retry schedule of a deferred email: about 10 s, 30 s, 2 min, 10 min, 30 min, then hourly until
 * 24 h have passed since the first attempt; after that the email is `failed`.
 */
const BASE_DELAYS_S = [10, 30, 120, 600, 1800];
const HOURLY_S = 3600;
const WINDOW_S = 24 * 3600;

function baseSchedule(): number[] {
  const delays = [...BASE_DELAYS_S];
  let total = delays.reduce((a, b) => a + b, 0);
  while (total + HOURLY_S <= WINDOW_S) {
    delays.push(HOURLY_S);
    total += HOURLY_S;
  }
  return delays;
}

const SCHEDULE_S = baseSchedule();

export class RetrySchedule {
  /** @param firstDelayMs the first delay; the others keep their ratio to it (10 s in production). */
  constructor(private readonly firstDelayMs: number) {}

  /** Attempts in all, the first one included. */
  get maxAttempts(): number {
    return SCHEDULE_S.length + 1;
  }

  /** Delay before the next attempt, after `failedAttempts` attempts have failed (1 → the first retry). */
  delayAfter(failedAttempts: number): number {
    const seconds = SCHEDULE_S[Math.min(Math.max(failedAttempts, 1), SCHEDULE_S.length) - 1];
    return Math.round((seconds / BASE_DELAYS_S[0]) * this.firstDelayMs);
  }

  /** When the next attempt is due, after `failedAttempts` attempts in all, the last one ending `at`. */
  nextAttemptAt(failedAttempts: number, at: Date): Date {
    return new Date(at.getTime() + this.delayAfter(failedAttempts));
  }
}

/**
 * The delay of a job added again for a message whose job was lost (the sweeper): until the later of its scheduled
 * time and the time its next attempt is due, so that it keeps its place in the schedule; 0 when both are past or
 * unknown.
 */
export function requeueDelay(times: { notBefore?: Date | null; nextAttemptAt?: Date | null }, now: number): number {
  const due = Math.max(times.notBefore?.getTime() ?? 0, times.nextAttemptAt?.getTime() ?? 0);
  return Math.max(0, due - now);
}
