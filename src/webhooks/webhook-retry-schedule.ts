const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** Answers that say the receiver is overloaded: the endpoint's other attempts wait too (HTTP 429, 502, 503, 504). */
export const OVERLOADED_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** Each retry wait is lengthened by a random 0–20 %, so that the retries of a burst do not all come back at once. */
export const RETRY_JITTER = 0.2;

/** A Retry-After beyond this many seconds is read as this many (the schedule bounds it far lower anyway). */
const MAX_RETRY_AFTER_S = 1e9;

/**
 * WEBHOOK_RETRY_SCHEDULE (D-23): the waits before each retry of a failed delivery, as `5s,5m,30m,2h,5h,10h,10h`.
 * A delivery (or a replay) gets one attempt more than there are waits; then it is failed.
 */
export class WebhookRetrySchedule {
  constructor(readonly waitsMs: readonly number[]) {}

  static parse(text: string): WebhookRetrySchedule {
    const waits = text.split(',').map((part) => {
      const match = /^(\d+)(ms|s|m|h)$/.exec(part.trim());
      if (!match) throw new Error(`'${part}' is not a duration like 500ms, 5s, 5m or 2h`);
      return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
    });
    return new WebhookRetrySchedule(waits);
  }

  /** Attempts in a round, the first one included. */
  get attemptsPerRound(): number {
    return this.waitsMs.length + 1;
  }

  get longestWaitMs(): number {
    return Math.max(...this.waitsMs);
  }

  /** The wait before the next attempt after `failed` attempts of the round failed (1 → the first retry); null when none is left. */
  waitAfter(failed: number): number | null {
    return failed >= 1 && failed <= this.waitsMs.length ? this.waitsMs[failed - 1] : null;
  }

  /**
   * The wait actually used before the next attempt: the schedule's, made longer (never shorter) by the receiver's
   * Retry-After up to the schedule's longest wait, then lengthened by the jitter; null when the round is over
   * (a Retry-After does not add attempts).
   */
  retryWait(failed: number, retryAfterMs: number | null, random: () => number = Math.random): number | null {
    const scheduled = this.waitAfter(failed);
    if (scheduled === null) return null;
    const wait = retryAfterMs === null ? scheduled : clamp(retryAfterMs, scheduled, this.longestWaitMs);
    return Math.round(wait * (1 + RETRY_JITTER * random()));
  }

  /**
   * How long an endpoint that answered overloaded (OVERLOADED_STATUSES) gets no other attempt: what its
   * Retry-After asked, between the schedule's first and longest waits, or the first wait when it asked nothing.
   */
  endpointPause(retryAfterMs: number | null): number {
    const first = this.waitsMs[0];
    return retryAfterMs === null ? first : clamp(retryAfterMs, first, this.longestWaitMs);
  }
}

/**
 * A Retry-After header's wait in ms from `now`: delay-seconds or an HTTP date (RFC 9110 §10.2.3); a date in the
 * past is 0; null when absent or neither. HTTP dates are in GMT: one without a zone (the asctime form) is read as
 * GMT, not in the server's local zone.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Math.min(Number(text), MAX_RETRY_AFTER_S) * 1000;
  // Date.parse also reads bare numbers and other odd forms: a date has its day or month spelled out.
  if (!/[a-z]{3}/i.test(text)) return null;
  const zoned = /(?:[a-z]|[+-]\d{2}:?\d{2})$/i.test(text);
  const at = Date.parse(zoned ? text : `${text} GMT`);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(value, min), Math.max(min, max));
}
