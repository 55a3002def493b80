import type { Request } from 'express';
import { backLink, isNavigation, requestLanguage, wantsJson } from './navigation';

function request(headers: Record<string, string>, body?: unknown): Request {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return {
    body,
    get: (name: string) => lower[name.toLowerCase()],
    is: (type: string) => (lower['content-type'] ?? '').startsWith(type),
  } as unknown as Request;
}

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('wantsJson and isNavigation', () => {
  it.each([
    ['fetch(): Sec-Fetch-Mode cors, Accept */*', { 'Sec-Fetch-Mode': 'cors', Accept: '*/*' }, true, false],
    ['fetch() asking for HTML is still a script', { 'Sec-Fetch-Mode': 'cors', Accept: 'text/html' }, true, false],
    ['a form post: Sec-Fetch-Mode navigate', { 'Sec-Fetch-Mode': 'navigate', Accept: BROWSER_ACCEPT }, false, true],
    ['an old browser: Accept with text/html', { Accept: BROWSER_ACCEPT }, false, true],
    ['curl: Accept */*', { Accept: '*/*' }, true, false],
    ['a client asking for JSON', { Accept: 'application/json' }, true, false],
    ['no Accept, no Sec-Fetch-Mode (D-25: redirected, errors in JSON)', {}, false, false],
    ['XHR', { 'X-Requested-With': 'XMLHttpRequest', Accept: BROWSER_ACCEPT }, true, false],
    [
      'an Android WebView page load: X-Requested-With names the app',
      { 'X-Requested-With': 'com.example.app', 'Sec-Fetch-Mode': 'navigate', Accept: BROWSER_ACCEPT },
      false,
      true,
    ],
    ['a JSON body', { 'Content-Type': 'application/json', 'Sec-Fetch-Mode': 'navigate' }, true, false],
  ])('%s', (_what, headers, json, navigation) => {
    expect(wantsJson(request(headers))).toBe(json);
    expect(isNavigation(request(headers))).toBe(navigation);
  });
});

describe('requestLanguage', () => {
  it('takes the posted _language, else Accept-Language, else English', () => {
    expect(requestLanguage(request({ 'Accept-Language': 'de' }, { _language: 'es' }))).toBe('es');
    expect(requestLanguage(request({ 'Accept-Language': 'de' }, { _language: ['es'] }))).toBe('de');
    expect(requestLanguage(request({ 'Accept-Language': 'pt-BR,fr;q=0.5' }))).toBe('fr');
    expect(requestLanguage(request({}, 'not an object'))).toBe('en');
  });
});

describe('backLink', () => {
  const site = 'https://site.test';
  it('is the Referer when it is of the origin that may post, else that origin’s home page', () => {
    expect(backLink(request({ Referer: `${site}/contact?x=1`, Origin: site }), site)).toBe(`${site}/contact?x=1`);
    expect(backLink(request({ Referer: 'https://other.test/page', Origin: site }), site)).toBe(`${site}/`);
    expect(backLink(request({ Referer: 'javascript:alert(1)', Origin: site }), site)).toBe(`${site}/`);
  });

  it('is null without an origin that may post: no link to a page the request chose', () => {
    expect(backLink(request({ Referer: 'https://evil.test/phish', Origin: 'https://evil.test' }), null)).toBeNull();
  });
});
