const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

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

  /** The wait before the next attempt after `failed` attempts of the round failed (1 → the first retry); null when none is left. */
  waitAfter(failed: number): number | null {
    return failed >= 1 && failed <= this.waitsMs.length ? this.waitsMs[failed - 1] : null;
  }
}
