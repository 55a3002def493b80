import { createHash } from 'node:crypto';

/** SHA-256 of the text's UTF-8 bytes, as 64 lower-case hex characters. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
