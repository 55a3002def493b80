import { timingSafeEqual } from 'node:crypto';

/**
 * Whether `given` is what one of `keys` makes with `make`, compared in constant time: the check of a MAC that the
 * current key or an ENCRYPTION_KEY_PREVIOUS key may have made (new ones are made with the first key only).
 */
export function madeWithAnyKey(given: Buffer, keys: readonly Buffer[], make: (key: Buffer) => Buffer): boolean {
  return keys.some((key) => {
    const expected = make(key);
    return expected.length === given.length && timingSafeEqual(given, expected);
  });
}
