import { hostMatchesDomain } from './domain-match';

describe('hostMatchesDomain', () => {
  it('matches a host to a domain or its subdomains, not look-alikes', () => {
    expect(hostMatchesDomain('example.com', ['example.com'])).toBe(true);
    expect(hostMatchesDomain('www.Example.com', ['example.com'])).toBe(true);
    expect(hostMatchesDomain('mail.example.com.', ['Example.COM'])).toBe(true);
    expect(hostMatchesDomain('evilexample.com', ['example.com'])).toBe(false);
    expect(hostMatchesDomain('example.com.evil.net', ['example.com'])).toBe(false);
    expect(hostMatchesDomain('example.com', [])).toBe(false);
  });
});
