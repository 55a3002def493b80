import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A prefixed random id (D-3): `acc_4fQ2…`, 22 base62 characters (≈131 bits). */
export function newId(prefix: string): string {
  const bytes = randomBytes(22);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % 62];
  return `${prefix}_${out}`;
}
