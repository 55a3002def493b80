/** Redis did not answer a call within its time-out. */
export class RedisTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`no answer from Redis within ${timeoutMs} ms`);
  }
}

/**
 * The answer of a Redis call, or a RedisTimeoutError when it takes longer than `timeoutMs`: for callers that go on
 * without Redis rather than wait for it. The call itself is not cancelled; a late failure of it is ignored.
 */
export async function withRedisTimeout<T>(call: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeoutError(timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
