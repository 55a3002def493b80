import { execFileSync } from 'node:child_process';
import { parseRetryAfter, WebhookRetrySchedule } from './webhook-retry-schedule';

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

describe('WebhookRetrySchedule.retryWait', () => {
  const schedule = WebhookRetrySchedule.parse('5s,5m,30m,2h');
  const none = () => 0;
  const most = () => 1;

  it('lengthens each wait by a random 0–20 %', () => {
    expect(schedule.retryWait(1, null, none)).toBe(5_000);
    expect(schedule.retryWait(1, null, () => 0.5)).toBe(5_500);
    expect(schedule.retryWait(1, null, most)).toBe(6_000);
    expect(schedule.retryWait(2, null, most)).toBe(360_000);
  });

  it('spreads the retries of a burst', () => {
    const waits = Array.from({ length: 200 }, () => schedule.retryWait(1, null)!);
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(5_000);
    expect(Math.max(...waits)).toBeLessThanOrEqual(6_000);
    expect(new Set(waits).size).toBeGreaterThan(50);
  });

  it('honours a longer Retry-After, up to the longest wait of the schedule', () => {
    expect(schedule.retryWait(1, 3_600_000, none)).toBe(3_600_000);
    expect(schedule.retryWait(1, 3_600_000, most)).toBe(4_320_000);
    expect(schedule.retryWait(1, 24 * 3_600_000, none)).toBe(7_200_000);
  });

  it('never retries sooner than the schedule, whatever Retry-After says', () => {
    expect(schedule.retryWait(2, 1_000, none)).toBe(300_000);
    expect(schedule.retryWait(1, 0, none)).toBe(5_000);
  });

  it('adds no attempt for a Retry-After once the round is over', () => {
    expect(schedule.retryWait(5, 1_000, none)).toBeNull();
  });
});

describe('WebhookRetrySchedule.endpointPause', () => {
  const schedule = WebhookRetrySchedule.parse('5s,5m,30m,2h');

  it('is the first wait when the endpoint asked for none', () => {
    expect(schedule.endpointPause(null)).toBe(5_000);
  });

  it('is the Retry-After, between the first and the longest wait', () => {
    expect(schedule.endpointPause(3_600_000)).toBe(3_600_000);
    expect(schedule.endpointPause(1_000)).toBe(5_000);
    expect(schedule.endpointPause(48 * 3_600_000)).toBe(7_200_000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-06-09T10:00:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('3600', now)).toBe(3_600_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('99999999999999999999', now)).toBe(1e12);
  });

  it('reads an HTTP date, a past one as no wait', () => {
    expect(parseRetryAfter('Tue, 09 Jun 2026 11:00:00 GMT', now)).toBe(3_600_000);
    expect(parseRetryAfter('Tue, 09 Jun 2026 09:00:00 GMT', now)).toBe(0);
  });

  it('reads the other HTTP date forms in GMT, whatever the server’s zone', () => {
    // A zone is fixed when the process starts: this module is loaded again in a process living in New York.
    const script = `
      const { transformFileSync } = require('@swc/core');
      const { code } = transformFileSync(${JSON.stringify(require.resolve('./webhook-retry-schedule'))}, {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } });
      const loaded = { exports: {} };
      new Function('exports', 'module', 'require', code)(loaded.exports, loaded, require);
      const now = ${now};
      console.log(JSON.stringify(['Tue Jun  9 11:00:00 2026', 'Tuesday, 09-Jun-26 11:00:00 GMT', 'Tue, 09 Jun 2026 11:00:00 GMT']
        .map((value) => loaded.exports.parseRetryAfter(value, now))));`;
    const output = execFileSync(process.execPath, ['-e', script], { env: { ...process.env, TZ: 'America/New_York' } });
    expect(JSON.parse(output.toString())).toEqual([3_600_000, 3_600_000, 3_600_000]);
  });

  it.each([undefined, null, '', '-5', '1.5', 'soon', 'in 5 minutes'])('ignores %p', (value) => {
    expect(parseRetryAfter(value, now)).toBeNull();
  });
});
