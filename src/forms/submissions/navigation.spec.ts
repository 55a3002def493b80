import type { Request } from 'express';
import { isNavigation, postingPage, requestLanguage, wantsJson } from './navigation';

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

describe('postingPage', () => {
  it('is the Referer, else the Origin, http(s) only', () => {
    expect(postingPage(request({ Referer: 'https://site.test/contact?x=1', Origin: 'https://site.test' }))).toBe(
      'https://site.test/contact?x=1',
    );
    expect(postingPage(request({ Referer: 'javascript:alert(1)', Origin: 'https://site.test' }))).toBe('https://site.test/');
    expect(postingPage(request({ Origin: 'null' }))).toBeNull();
  });
});
