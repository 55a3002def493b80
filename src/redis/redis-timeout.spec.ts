import { RedisTimeoutError, withRedisTimeout } from './redis-timeout';

describe('withRedisTimeout', () => {
  afterEach(() => jest.useRealTimers());

  it('answers what the call answers in time', async () => {
    await expect(withRedisTimeout(Promise.resolve('OK'), 50)).resolves.toBe('OK');
  });

  it('passes on the call’s own failure', async () => {
    await expect(withRedisTimeout(Promise.reject(new Error('READONLY')), 50)).rejects.toThrow('READONLY');
  });

  it('fails with RedisTimeoutError when the call takes longer, and ignores its late failure', async () => {
    jest.useFakeTimers();
    let fail!: (err: Error) => void;
    const slow = new Promise<string>((_, reject) => (fail = reject));
    const answer = withRedisTimeout(slow, 2000);
    jest.advanceTimersByTime(2000);
    await expect(answer).rejects.toEqual(new RedisTimeoutError(2000));
    await expect(answer).rejects.toThrow('no answer from Redis within 2000 ms');
    fail(new Error('connection closed'));
  });
});
