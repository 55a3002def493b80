import { rfc5322Date } from './rfc5322-date';

describe('rfc5322Date', () => {
  it('formats dates as RFC 5322 in UTC', () => {
    expect(rfc5322Date(new Date(Date.UTC(2026, 0, 4, 23, 0, 9)))).toBe('Sun, 4 Jan 2026 23:00:09 +0000');
  });
});
