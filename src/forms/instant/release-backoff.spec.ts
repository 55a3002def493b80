import { FIRST_RETRY_MS, LONGEST_RETRY_MS, MAX_REMEMBERED, ReleaseBackoff } from './release-backoff';

describe('ReleaseBackoff', () => {
  it('leaves a failed submission out for a minute, then twice as long after each further failure', () => {
    const backoff = new ReleaseBackoff();
    expect(backoff.failed('sub_1', 0)).toBe(true);
    expect(backoff.waiting(FIRST_RETRY_MS - 1)).toEqual(['sub_1']);
    expect(backoff.waiting(FIRST_RETRY_MS)).toEqual([]);

    expect(backoff.failed('sub_1', FIRST_RETRY_MS)).toBe(false);
    expect(backoff.waiting(3 * FIRST_RETRY_MS - 1)).toEqual(['sub_1']);
    expect(backoff.waiting(3 * FIRST_RETRY_MS)).toEqual([]);
  });

  it('waits at most the longest wait', () => {
    const backoff = new ReleaseBackoff();
    for (let i = 0; i < 20; i++) backoff.failed('sub_1', 0);
    expect(backoff.waiting(LONGEST_RETRY_MS - 1)).toEqual(['sub_1']);
    expect(backoff.waiting(LONGEST_RETRY_MS)).toEqual([]);
  });

  it('forgets a submission released at last, and the oldest when it remembers too many', () => {
    const backoff = new ReleaseBackoff();
    backoff.failed('sub_1', 0);
    backoff.succeeded('sub_1');
    expect(backoff.waiting(0)).toEqual([]);
    expect(backoff.failed('sub_1', 0)).toBe(true);

    for (let i = 2; i <= MAX_REMEMBERED + 1; i++) backoff.failed(`sub_${i}`, 0);
    const waiting = backoff.waiting(0);
    expect(waiting).toHaveLength(MAX_REMEMBERED);
    expect(waiting).not.toContain('sub_1');
  });
});
