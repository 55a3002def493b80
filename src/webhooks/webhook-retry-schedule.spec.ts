import { WebhookRetrySchedule } from './webhook-retry-schedule';

describe('WebhookRetrySchedule', () => {
  it('reads the D-23 default: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    const schedule = WebhookRetrySchedule.parse('5s,5m,30m,2h,5h,10h,10h');
    expect(schedule.waitsMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(schedule.attemptsPerRound).toBe(8);
  });

  it('reads milliseconds, and spaces around the parts', () => {
    expect(WebhookRetrySchedule.parse('200ms, 400ms').waitsMs).toEqual([200, 400]);
  });

  it('gives the wait after each failed attempt, and none once the schedule is used up', () => {
    const schedule = WebhookRetrySchedule.parse('200ms,400ms');
    expect([1, 2, 3].map((failed) => schedule.waitAfter(failed))).toEqual([200, 400, null]);
    expect(schedule.waitAfter(0)).toBeNull();
  });

  it.each(['', '5', '5d', '1.5s', '5s,,5m', '-5s'])('refuses %p', (text) => {
    expect(() => WebhookRetrySchedule.parse(text)).toThrow(/is not a duration/);
  });
});
