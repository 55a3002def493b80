import { requeueDelay, RetrySchedule } from './retry-schedule';

describe('RetrySchedule', () => {
  const production = new RetrySchedule(10_000);

  it('follows D-20: 10 s, 30 s, 2 min, 10 min, 30 min, then hourly', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => production.delayAfter(n) / 1000)).toEqual([10, 30, 120, 600, 1800, 3600, 3600]);
  });

  it('stops retrying within 24 hours of the first attempt', () => {
    let total = 0;
    for (let failed = 1; failed < production.maxAttempts; failed++) total += production.delayAfter(failed);
    expect(total).toBeLessThanOrEqual(24 * 3600 * 1000);
    expect(total + 3600 * 1000).toBeGreaterThan(24 * 3600 * 1000);
  });

  it('scales every delay with the first one', () => {
    const fast = new RetrySchedule(100);
    expect([1, 2, 3, 6].map((n) => fast.delayAfter(n))).toEqual([100, 300, 1200, 36_000]);
    expect(fast.maxAttempts).toBe(production.maxAttempts);
  });
});

describe('requeueDelay', () => {
  const now = Date.parse('2030-01-01T12:00:00Z');
  const at = (ms: number) => new Date(now + ms);

  it('waits until the next attempt a deferred message was due for', () => {
    expect(requeueDelay({ nextAttemptAt: at(95_000) }, now)).toBe(95_000);
  });

  it('waits for the later of its scheduled time and its next attempt', () => {
    expect(requeueDelay({ notBefore: at(10_000), nextAttemptAt: at(4_000) }, now)).toBe(10_000);
    expect(requeueDelay({ notBefore: at(-60_000), nextAttemptAt: at(4_000) }, now)).toBe(4_000);
  });

  it('does not wait when the time is past or unknown', () => {
    expect(requeueDelay({ nextAttemptAt: at(-1) }, now)).toBe(0);
    expect(requeueDelay({ notBefore: null, nextAttemptAt: null }, now)).toBe(0);
    expect(requeueDelay({}, now)).toBe(0);
  });

  it('keeps the schedule where a deferred message left it: the delay after its attempts, less the time since', () => {
    const schedule = new RetrySchedule(10_000);
    const deferredAt = new Date(now - 20_000);
    // Deferred twice: the third attempt comes 30 s after the second, whose job Redis lost 20 s later.
    expect(requeueDelay({ nextAttemptAt: schedule.nextAttemptAt(2, deferredAt) }, now)).toBe(10_000);
  });
});
