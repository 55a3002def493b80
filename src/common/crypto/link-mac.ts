import { createHmac } from 'node:crypto';

/** The MAC of a link Mailroom mails or redirects to: 16 bytes of HMAC-SHA256, so forging one is 2^128 work. */
export const LINK_MAC_BYTES = 16;

export function linkMac(key: Buffer, text: string): Buffer {
  return createHmac('sha256', key).update(text).digest().subarray(0, LINK_MAC_BYTES);
}
