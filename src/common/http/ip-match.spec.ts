import { compileIpAllowlist, isIpOrCidr } from './ip-match';

describe('ip-match', () => {
  it('accepts addresses and CIDR ranges of both families', () => {
    for (const ok of ['203.0.113.7', '10.0.0.0/8', '2001:db8::1', '2001:db8::/32', '::1']) expect(isIpOrCidr(ok)).toBe(true);
    for (const bad of ['10.0.0.0/33', '1', '0x7f.1', 'example.com', '10.0.0.1/8/8', '']) expect(isIpOrCidr(bad)).toBe(false);
  });

  it('matches addresses against the allowlist, IPv4-mapped IPv6 as IPv4', () => {
    const allowed = compileIpAllowlist(['10.0.0.0/8', '203.0.113.7', '2001:db8::/32']);
    expect(allowed('10.20.30.40')).toBe(true);
    expect(allowed('::ffff:10.1.2.3')).toBe(true);
    expect(allowed('203.0.113.7')).toBe(true);
    expect(allowed('203.0.113.8')).toBe(false);
    expect(allowed('2001:db8:1::5')).toBe(true);
    expect(allowed('2001:db9::5')).toBe(false);
    expect(allowed(undefined)).toBe(false);
  });
});
