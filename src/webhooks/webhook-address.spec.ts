import { isLocalhostName, refusedAddressKind } from './webhook-address';

describe('refusedAddressKind', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.0.9', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['10.0.0.1', 'a private address'],
    ['172.16.5.4', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['169.254.169.254', 'a link-local address'],
    ['fe80::1', 'a link-local address'],
    ['fc00::1', 'a unique-local address'],
    ['fd12:3456::1', 'a unique-local address'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['0.0.0.0', 'an unspecified address'],
    ['::', 'an unspecified address'],
    ['255.255.255.255', 'the broadcast address'],
    ['224.0.0.1', 'a multicast address'],
    ['ff02::1', 'a multicast address'],
    ['240.0.0.1', 'a reserved address'],
    ['192.0.2.10', 'a reserved address'],
    ['2001:db8::1', 'a reserved address'],
  ])('refuses %s as %s', (address, kind) => {
    expect(refusedAddressKind(address)).toBe(kind);
  });

  it('judges IPv4-mapped IPv6 addresses as the IPv4 address they carry', () => {
    expect(refusedAddressKind('::ffff:127.0.0.1')).toBe('a loopback address');
    expect(refusedAddressKind('::ffff:7f00:1')).toBe('a loopback address');
    expect(refusedAddressKind('::ffff:10.1.2.3')).toBe('a private address');
    expect(refusedAddressKind('::ffff:169.254.169.254')).toBe('a link-local address');
    expect(refusedAddressKind('::ffff:93.184.215.14')).toBeNull();
  });

  it('refuses the forms that tunnel IPv4 addresses: 6to4, Teredo, NAT64, IPv4-compatible', () => {
    expect(refusedAddressKind('2002:7f00:1::1')).toBe('a 6to4 address'); // 6to4 of 127.0.0.1
    expect(refusedAddressKind('2002:c0a8:101::1')).toBe('a 6to4 address'); // 6to4 of 192.168.1.1
    expect(refusedAddressKind('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toBe('a Teredo address');
    expect(refusedAddressKind('64:ff9b::7f00:1')).toBe('a NAT64 address');
    expect(refusedAddressKind('::127.0.0.1')).toBe('a loopback address');
    expect(refusedAddressKind('::5db8:d70e')).toBe('an IPv4-compatible address'); // ::93.184.215.14
  });

  it('lets public unicast addresses through', () => {
    for (const address of [
      '93.184.215.14',
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '2a00:1450:4001:80b::200e',
    ]) {
      expect(refusedAddressKind(address)).toBeNull();
    }
  });

  it('refuses what is not an address', () => {
    expect(refusedAddressKind('example.com')).toBe('not an IP address');
  });
});

describe('isLocalhostName', () => {
  it('knows localhost and its subdomains, whatever the case', () => {
    expect(isLocalhostName('localhost')).toBe(true);
    expect(isLocalhostName('LOCALHOST.')).toBe(true);
    expect(isLocalhostName('api.localhost')).toBe(true);
    expect(isLocalhostName('localhost.example.com')).toBe(false);
    expect(isLocalhostName('notlocalhost')).toBe(false);
  });
});
