import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { withFormQuotaMessage } from './form-quota-message';

describe('withFormQuotaMessage', () => {
  const quota = new AppException(ErrorCode.AccountQuotaExceeded, 'Account quota exceeded: …', { limit: 5 }, { 'Retry-After': '60' });

  it('replaces the message of a quota 429 with the form’s global_limited text, keeping code, details and headers', () => {
    const err = withFormQuotaMessage(quota, { messages: { global_limited: '  We are busy, try again later.  ' } }) as AppException;
    expect(err).toBeInstanceOf(AppException);
    expect([err.code, err.status, err.message, err.details, err.headers]).toEqual([
      ErrorCode.AccountQuotaExceeded,
      429,
      'We are busy, try again later.',
      { limit: 5 },
      { 'Retry-After': '60' },
    ]);
    const plan = new AppException(ErrorCode.QuotaExceeded, 'Quota exceeded');
    expect((withFormQuotaMessage(plan, { messages: { global_limited: 'Busy' } }) as AppException).message).toBe('Busy');
  });

  it('leaves other errors, and forms without a usable text, as they are', () => {
    const other = new AppException(ErrorCode.RateLimitExceeded, 'Rate limit exceeded');
    expect(withFormQuotaMessage(other, { messages: { global_limited: 'Busy' } })).toBe(other);
    expect(withFormQuotaMessage(quota, undefined)).toBe(quota);
    expect(withFormQuotaMessage(quota, { messages: { global_limited: '   ' } })).toBe(quota);
    expect(withFormQuotaMessage(quota, { messages: { global_limited: 42 } })).toBe(quota);
    expect(withFormQuotaMessage(quota, { messages: 'Busy' })).toBe(quota);
    const plain = new Error('boom');
    expect(withFormQuotaMessage(plain, { messages: { global_limited: 'Busy' } })).toBe(plain);
  });
});
