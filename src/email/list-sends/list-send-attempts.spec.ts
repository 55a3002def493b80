import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { failureDescription, gaveUpReason, INTERNAL_FAILURE, jobAttemptsLeft } from './list-send-attempts';

describe('list send attempts', () => {
  it('gives a job what the send has left of its attempts, at least one', () => {
    expect(jobAttemptsLeft(10, 0)).toBe(10);
    expect(jobAttemptsLeft(10, 7)).toBe(3);
    expect(jobAttemptsLeft(10, 10)).toBe(1);
    expect(jobAttemptsLeft(3, 12)).toBe(1);
  });

  it('tells the reader a refusal of ours as worded, and no internals of any other error', () => {
    expect(failureDescription(new AppException(ErrorCode.NotFound, "Template 'news' was not found"))).toBe("Template 'news' was not found");
    expect(failureDescription(new Error('relation "messages" violates check constraint "x"'))).toBe(INTERNAL_FAILURE);
    expect(failureDescription('boom')).toBe(INTERNAL_FAILURE);
  });

  it('says after how many attempts a send was given up, and why if a run said so', () => {
    expect(gaveUpReason(10, 'the list is gone')).toBe('gave up after 10 attempts: the list is gone');
    expect(gaveUpReason(10, null)).toBe('gave up after 10 attempts: its runs never finished');
  });
});
