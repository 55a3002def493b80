import { normalizeDomainName } from './domain-name';

describe('normalizeDomainName', () => {
  it('lower-cases, trims and drops the root dot', () => {
    expect(normalizeDomainName(`${'abcdefghi.'.repeat(25)}com`)).toHaveLength(253);
    expect(normalizeDomainName('  Mail.Example.COM. ')).toBe('mail.example.com');
    expect(normalizeDomainName('a-b.co.uk')).toBe('a-b.co.uk');
  });

  it('stores internationalised names in punycode', () => {
    expect(normalizeDomainName('Bücher.example')).toBe('xn--bcher-kva.example');
    expect(normalizeDomainName('example.xn--p1ai')).toBe('example.xn--p1ai');
  });

  it.each([
    ['', 'empty'],
    ['localhost', 'single label'],
    ['192.168.0.1', 'IPv4 address'],
    ['::1', 'IPv6 address'],
    ['-bad.example.com', 'label starting with a hyphen'],
    ['bad-.example.com', 'label ending with a hyphen'],
    ['a..example.com', 'empty label'],
    ['under_score.example.com', 'underscore'],
    ['user@example.com', 'an address'],
    ['https://example.com', 'a URL'],
    ['exa mple.com', 'a space'],
    ['example.c0m', 'numeric top-level label'],
    [`${'a'.repeat(64)}.com`, 'label over 63 characters'],
    [`${'abcdefghi.'.repeat(26)}com`, 'name over 253 characters'],
  ])('refuses %j (%s)', (input) => {
    expect(normalizeDomainName(input)).toBeNull();
  });
});
