import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import type { MessageWithEvents } from '../../outbox/acceptance.repository';
import { pageProgress, quotaRefusalOf, SubscriberOutcome } from './list-send-pages';

const made = (email: string): SubscriberOutcome => ({
  email,
  message: { message: { id: `msg_${email}` }, events: [] } as unknown as MessageWithEvents,
});
const ids = (messages: MessageWithEvents[]) => messages.map((m) => m.message.id);

describe('pageProgress', () => {
  const page: SubscriberOutcome[] = [
    made('a@x.org'),
    { email: 'b@x.org', skipped: 'suppressed' },
    made('c@x.org'),
    { email: 'd@x.org', skipped: 'failed' },
    made('e@x.org'),
    { email: 'f@x.org', skipped: 'suppressed' },
  ];

  it('takes the whole page by default, up to its last subscriber', () => {
    expect(pageProgress(page)).toEqual({
      messages: expect.any(Array),
      suppressed: 2,
      failed: 1,
      cursor: 'f@x.org',
    });
    expect(ids(pageProgress(page).messages)).toEqual(['msg_a@x.org', 'msg_c@x.org', 'msg_e@x.org']);
  });

  it('stops right after the last message it may make: what follows is neither made nor skipped', () => {
    const two = pageProgress(page, 2);
    expect(ids(two.messages)).toEqual(['msg_a@x.org', 'msg_c@x.org']);
    expect(two).toMatchObject({ suppressed: 1, failed: 0, cursor: 'c@x.org' });
  });

  it('makes nothing and moves no cursor when it may make none', () => {
    expect(pageProgress(page, 0)).toEqual({ messages: [], suppressed: 0, failed: 0, cursor: null });
  });

  it('takes the whole page when it has fewer messages than it may make', () => {
    expect(pageProgress(page, 10)).toMatchObject({ suppressed: 2, failed: 1, cursor: 'f@x.org' });
    expect(pageProgress([], 10)).toEqual({ messages: [], suppressed: 0, failed: 0, cursor: null });
  });
});

describe('quotaRefusalOf', () => {
  const refusal = (code: ErrorCode, details?: Record<string, unknown>) => new AppException(code, 'refused', details);

  it('reads the quota and what it has left from a quota 429', () => {
    expect(quotaRefusalOf(refusal(ErrorCode.QuotaExceeded, { quota: 'emails_per_month', remaining: 30, requested: 50 }))).toEqual({
      quota: 'emails_per_month',
      remaining: 30,
    });
    expect(quotaRefusalOf(refusal(ErrorCode.AccountQuotaExceeded, { quota: 'global_hourly', remaining: 0 }))).toEqual({
      quota: 'global_hourly',
      remaining: 0,
    });
  });

  it('is null for any other error', () => {
    expect(quotaRefusalOf(refusal(ErrorCode.RateLimitExceeded, { quota: 'x', remaining: 1 }))).toBeNull();
    expect(quotaRefusalOf(refusal(ErrorCode.QuotaExceeded))).toBeNull();
    expect(quotaRefusalOf(new Error('connection reset'))).toBeNull();
  });
});
