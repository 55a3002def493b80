import { createHmac } from 'node:crypto';
import { toBase32 } from '../common/base32';

/** Bytes of HMAC-SHA256 a token keeps: 80 bits, 16 base32 characters. */
const TOKEN_BYTES = 10;

/**
 * What the loop field (X-Mailroom-Loop) carries for each address a message was forwarded for: an opaque token, a
 * keyed HMAC of the lower-cased address, so that a copy at one destination does not name the other addresses the
 * message went to (a Bcc'd alias). A message that comes back is a loop when it carries the token of an address it is
 * for now: only we can compute it.
 *
 * Keys: one derived from ENCRYPTION_KEY, then one from each ENCRYPTION_KEY_PREVIOUS (a token made before a key
 * rotation still stops a loop). Earlier versions wrote the address itself; that form is still recognised.
 */
export class LoopTokens {
  constructor(private readonly keys: readonly Buffer[]) {
    if (keys.length === 0 || keys.some((key) => key.length === 0)) throw new Error('The loop token key is empty');
  }

  /** The token written for `address`, made with the current key. */
  tokenOf(address: string): string {
    return this.token(this.keys[0], address);
  }

  /**
   * Every loop field value (lower-cased) that says a message was forwarded for `address` already: its token under
   * each key, and the address in plain text as earlier versions wrote it.
   */
  marksOf(address: string): string[] {
    return [...this.keys.map((key) => this.token(key, address)), address.toLowerCase()];
  }

  private token(key: Buffer, address: string): string {
    return toBase32(createHmac('sha256', key).update(address.toLowerCase()).digest().subarray(0, TOKEN_BYTES));
  }
}
