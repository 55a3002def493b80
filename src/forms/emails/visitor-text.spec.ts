import { defangLinks, escapeBidi } from './visitor-text';

describe('escapeBidi', () => {
  it('shows every bidi control and directional mark as its code point', () => {
    expect(escapeBidi('invoice\u202Efdp.exe')).toBe('invoice<U+202E>fdp.exe');
    expect(escapeBidi('\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c')).toBe(
      '<U+202A><U+202B><U+202C><U+202D><U+2066><U+2067><U+2068><U+2069><U+200E><U+200F><U+061C>',
    );
  });

  it('leaves right-to-left text itself alone', () => {
    expect(escapeBidi('שלום مرحبا')).toBe('שלום مرحبا');
  });
});

describe('defangLinks', () => {
  it('turns URLs and hostnames into text no mail client links', () => {
    expect(defangLinks('Verify at https://evil.test/login now')).toBe('Verify at hxxps[:]//evil[.]test/login now');
    expect(defangLinks('http://a.b.example/x?y=1')).toBe('hxxp[:]//a[.]b[.]example/x?y=1');
    expect(defangLinks('FTP://files.evil.test')).toBe('FTP[:]//files[.]evil[.]test');
    expect(defangLinks('see www.evil.test or evil.test.')).toBe('see www[.]evil[.]test or evil[.]test.');
    expect(defangLinks('mail ada@mail.evil.test')).toBe('mail ada@mail[.]evil[.]test');
    expect(defangLinks('http://192.168.1.10:8080/')).toBe('hxxp[:]//192[.]168[.]1[.]10:8080/');
    expect(defangLinks('evil\u3002test and evil\uff0etest')).toBe('evil[.]test and evil[.]test');
    expect(defangLinks('пример.рф')).toBe('пример[.]рф');
  });

  it('keeps prose and numbers as written', () => {
    expect(defangLinks('Hello. It costs 12.50 EUR, version 1.2.3, at 10:30.')).toBe('Hello. It costs 12.50 EUR, version 1.2.3, at 10:30.');
  });

  it('takes linear time on hostile input (a quadratic pattern would outlast the test timeout)', () => {
    defangLinks('a.'.repeat(200_000) + 'a:'.repeat(200_000));
  });
});
