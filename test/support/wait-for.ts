/** Reads until `done` says yes, every 25 ms; fails naming `what` and the last value after `timeoutMs`. */
export async function waitFor<T>(what: string, read: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The first value `probe` finds (not undefined, null or false). */
export async function waitForValue<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 15_000,
): Promise<T> {
  return (await waitFor(what, probe, Boolean, timeoutMs)) as T;
}
