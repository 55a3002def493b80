import { isIP } from 'node:net';
import * as ipaddr from 'ipaddr.js';

/** How each ipaddr.js range a webhook may not reach reads in an error message. */
const RANGE_DESCRIPTIONS: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  carrierGradeNat: 'a carrier-grade NAT address',
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
  rfc6052: 'a NAT64 address',
  rfc6145: 'an IPv4-translated address',
  deprecatedSiteLocal: 'a site-local address',
};

/**
 * Why a webhook may not connect to `address` (IPv4 or IPv6 text), as "a loopback address"; null when it may.
 * Only ipaddr.js's `unicast` range (public addresses) passes. IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is judged as
 * the IPv4 address it carries; 6to4, Teredo and NAT64 forms are refused outright, since they can carry any
 * IPv4 address, private ones included.
 */
export function refusedAddressKind(address: string): string | null {
  if (!isIP(address)) return 'not an IP address';
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  if (range !== 'unicast') return RANGE_DESCRIPTIONS[range] ?? `a special-purpose address (${range})`;
  // ::a.b.c.d (IPv4-compatible, deprecated): ipaddr.js calls it unicast, yet it names an IPv4 address.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) {
    return 'an IPv4-compatible address';
  }
  return null;
}

/** RFC 6761: `localhost` and its subdomains are loopback whatever DNS says. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}
