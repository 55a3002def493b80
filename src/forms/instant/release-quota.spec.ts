import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import type { MessageWithEvents } from '../../outbox/acceptance.repository';
import { fittingCount, quotaRefusal, resetOf, roomLeft } from './release-quota';

describe('fittingCount', () => {
  const release = (...recipientCounts: number[]) => ({
    messages: recipientCounts.map(
      (n) => ({ message: { recipients: Array.from({ length: n }, (_, i) => `r${i}@a.test`) } }) as MessageWithEvents,
    ),
  });

  it('takes the oldest held submissions whose emails fit in the room left, stopping at the first that does not', () => {
    const releases = [release(1, 1), release(1), release(2), release(1)];
    expect(fittingCount(releases, 0)).toBe(0);
    expect(fittingCount(releases, 1)).toBe(0);
    expect(fittingCount(releases, 2)).toBe(1);
    expect(fittingCount(releases, 4)).toBe(2);
    expect(fittingCount(releases, 5)).toBe(3);
    expect(fittingCount(releases, 6)).toBe(4);
  });

  it('lets a submission without emails (all its recipients suppressed) through', () => {
    expect(fittingCount([release(), release(1)], 0)).toBe(1);
  });
});

describe('quotaRefusal', () => {
  it('tells a quota’s 429, with its room and reset, from any other error', () => {
    const refusal = new AppException(ErrorCode.QuotaExceeded, 'over', { remaining: 3, reset_time: '2030-01-01T00:00:00.000Z' });
    expect(quotaRefusal(refusal)).toBe(refusal);
    expect(roomLeft(refusal)).toBe(3);
    expect(resetOf(refusal)).toEqual(new Date('2030-01-01T00:00:00.000Z'));
    expect(quotaRefusal(new AppException(ErrorCode.Conflict, 'no'))).toBeNull();
    expect(quotaRefusal(new Error('db'))).toBeNull();
    expect(roomLeft(new AppException(ErrorCode.AccountQuotaExceeded, 'over'))).toBe(0);
  });
});
