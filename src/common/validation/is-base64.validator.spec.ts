import { randomBytes } from 'node:crypto';
import { isBase64 } from './is-base64.validator';

describe('isBase64', () => {
  it('takes what Buffer encodes, of every padding length', () => {
    for (const length of [0, 1, 2, 3, 4, 5, 255]) expect(isBase64(randomBytes(length).toString('base64'))).toBe(true);
  });

  it.each(['abc', 'ab=c', 'a===', '=abc', 'ab c', 'ab-_', 'abc\n', 'aGVsbG8=aGVs'])('refuses %j', (value) => {
    expect(isBase64(value)).toBe(false);
  });

  it('checks an attachment of 17 MB without running out of stack, also once its check is hot', () => {
    const large = randomBytes(13 * 1024 * 1024).toString('base64');
    for (let i = 0; i < 10_000; i++) isBase64('aGVsbG8=');
    expect(isBase64(large)).toBe(true);
    expect(isBase64(`${large.slice(0, -4)}*AAA`)).toBe(false);
  });
});
