import * as ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** True if the string is an IPv4/IPv6 address or CIDR range (dotted-quad IPv4 only: no "0x7f.1" forms). */
export function isIpOrCidr(entry: string): boolean {
  const [address, bits, ...rest] = entry.split('/');
  if (rest.length > 0) return false;
  const validAddress = ipaddr.IPv4.isValidFourPartDecimal(address) || ipaddr.IPv6.isValid(address);
  if (!validAddress) return false;
  return bits === undefined || ipaddr.isValidCIDR(entry);
}

/** Compiles an allowlist once; the matcher tests a client address (IPv4-mapped IPv6 counts as IPv4). */
export function compileIpAllowlist(entries: readonly string[]): (ip: string | undefined) => boolean {
  const ranges: Range[] = entries.map((entry) => {
    if (entry.includes('/')) return ipaddr.parseCIDR(entry);
    const address = ipaddr.parse(entry);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  });
  return (ip) => {
    if (!ip || !ipaddr.isValid(ip)) return false;
    const address = ipaddr.process(ip);
    return ranges.some(([range, bits]) => address.kind() === range.kind() && address.match(range, bits));
  };
}
