import { originListed, requestOrigin } from './origin-policy';

describe('requestOrigin', () => {
  it('reads Origin, else Referer, lower-casing the host', () => {
    expect(requestOrigin('https://WWW.Example.com', undefined)).toEqual({ origin: 'https://www.example.com', host: 'www.example.com' });
    expect(requestOrigin(undefined, 'http://blog.example.com:8080/post?x=1')).toEqual({
      origin: 'http://blog.example.com:8080',
      host: 'blog.example.com',
    });
    expect(requestOrigin('null', 'https://example.com/page')?.host).toBe('example.com');
  });

  it('ignores what is not an http(s) page', () => {
    expect(requestOrigin(undefined, undefined)).toBeNull();
    expect(requestOrigin('file://', 'not a url')).toBeNull();
    expect(requestOrigin('chrome-extension://abc', undefined)).toBeNull();
  });
});

describe('originListed', () => {
  const site = requestOrigin('https://shop.example.com', undefined)!;

  it('matches a full origin exactly, a host name, and *.host for its subdomains only', () => {
    expect(originListed(site, ['https://shop.example.com'])).toBe(true);
    expect(originListed(site, ['http://shop.example.com'])).toBe(false);
    expect(originListed(site, ['shop.example.com'])).toBe(true);
    expect(originListed(site, ['*.example.com'])).toBe(true);
    expect(originListed(requestOrigin('https://example.com', undefined)!, ['*.example.com'])).toBe(false);
    expect(originListed(requestOrigin('https://evilexample.com', undefined)!, ['*.example.com'])).toBe(false);
    expect(originListed(site, [])).toBe(false);
  });
});
