import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const TOP_LEVEL = /^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/**
 * A domain name as Mailroom stores it: trimmed, lower-cased, without the root dot, internationalised names
 * in their ASCII (punycode) form. Null when it is not a registrable host name (IP addresses, single labels,
 * underscores, empty labels, over 253 characters).
 */
export function normalizeDomainName(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '' || isIP(trimmed) !== 0 || /[\s/:@]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed.toLowerCase());
  if (ascii === '' || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return null;
  return TOP_LEVEL.test(labels[labels.length - 1]) ? ascii : null;
}
