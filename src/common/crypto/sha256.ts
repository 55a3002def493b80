import { createHash } from 'node:crypto';

/** SHA-256 of the bytes (a text's UTF-8 bytes), as 64 lower-case hex characters. */
export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
