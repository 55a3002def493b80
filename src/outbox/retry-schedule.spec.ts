import { RetrySchedule } from './retry-schedule';

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
