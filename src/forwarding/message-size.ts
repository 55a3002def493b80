import type { SMTPServerAddressArgs } from 'smtp-server';
import { InboundRefusal } from './inbound-refusal';

/** 552 5.3.4 (RFC 3463: message too big for system), at MAIL FROM for a declared size or at DATA for the bytes sent. */
export function messageTooBig(maxBytes: number): InboundRefusal {
  return new InboundRefusal(552, `5.3.4 Message too big: the limit is ${maxBytes} bytes`);
}

/**
 * The refusal of a MAIL FROM whose SIZE= parameter (RFC 1870) declares more than `maxBytes`, or null. smtp-server
 * checked its syntax already (digits only).
 */
export function declaredSizeRefusal(args: SMTPServerAddressArgs | false, maxBytes: number): InboundRefusal | null {
  const declared = args ? args.SIZE : undefined;
  if (typeof declared !== 'string') return null;
  return Number(declared) > maxBytes ? messageTooBig(maxBytes) : null;
}
