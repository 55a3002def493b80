import { ScannerFailure } from './scanner-socket';
import { parseSpamdReply, spamdExcerpt } from './spamd-client';

describe('parseSpamdReply', () => {
  it('reads the score, spamd’s own threshold and the rules of a SYMBOLS reply', () => {
    const reply =
      'SPAMD/1.1 0 EX_OK\r\nContent-length: 44\r\nSpam: True ; 1003.3 / 5.0\r\n\r\nGTUBE,MISSING_DATE,MISSING_MID,NO_RECEIVED\r\n';
    expect(parseSpamdReply(Buffer.from(reply))).toEqual({
      score: 1003.3,
      requiredScore: 5,
      rules: ['GTUBE', 'MISSING_DATE', 'MISSING_MID', 'NO_RECEIVED'],
    });
    expect(parseSpamdReply(Buffer.from('SPAMD/1.1 0 EX_OK\r\nContent-length: 0\r\nSpam: False ; -0.1 / 5.0\r\n\r\n'))).toEqual({
      score: -0.1,
      requiredScore: 5,
      rules: [],
    });
  });

  it('fails on an error code, a reply without a Spam header and anything that is not spamd', () => {
    expect(() => parseSpamdReply(Buffer.from('SPAMD/1.0 76 Bad header line: (EOF)\r\n'))).toThrow(
      new ScannerFailure('spamd: 76 Bad header line: (EOF)'),
    );
    expect(() => parseSpamdReply(Buffer.from('SPAMD/1.1 0 EX_OK\r\nContent-length: 0\r\n\r\n'))).toThrow(/no Spam header/);
    expect(() => parseSpamdReply(Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n'))).toThrow(/not a SPAMD reply/);
  });
});

describe('spamdExcerpt', () => {
  const MAX = 16 * 1024;
  const header = 'From: a@origin.test\r\nSubject: offer\r\nReceived: from a\r\n\tby b\r\n\r\n';
  const padding = 'Nothing to see here, just a line of padding.\r\n'.repeat(2000);

  it('gives a message that fits as it is', () => {
    const message = Buffer.from(`${header}Short.\r\n`);
    expect(spamdExcerpt(message, MAX)).toBe(message);
  });

  it('keeps the header and both ends of a longer body, within the limit, cut at line ends', () => {
    for (const body of [`BUY NOW\r\n${padding}`, `${padding}BUY NOW\r\n`]) {
      const excerpt = spamdExcerpt(Buffer.from(header + body), MAX).toString('latin1');
      expect(excerpt.length).toBeLessThanOrEqual(MAX);
      expect(excerpt.startsWith(header)).toBe(true);
      expect(excerpt).toContain('BUY NOW\r\n');
      expect(
        excerpt
          .slice(header.length)
          .split('\r\n')
          .slice(0, -1)
          .every((line) => line === 'BUY NOW' || line.startsWith('Nothing')),
      ).toBe(true);
    }
  });

  it('keeps the first and last fields of a padded header section, and the end of the body', () => {
    const fields = `From: a@origin.test\r\n${'X-Pad: 0123456789\r\n\t0123456789\r\n'.repeat(1000)}Subject: offer\r\n`;
    const excerpt = spamdExcerpt(Buffer.from(`${fields}\r\n${padding}BUY NOW\r\n`), MAX).toString('latin1');
    expect(excerpt.length).toBeLessThanOrEqual(MAX);
    const [head, body] = [excerpt.slice(0, excerpt.indexOf('\r\n\r\n') + 2), excerpt.slice(excerpt.indexOf('\r\n\r\n') + 4)];
    expect(head.startsWith('From: a@origin.test\r\n')).toBe(true);
    expect(head.endsWith('Subject: offer\r\n')).toBe(true);
    expect(head).toMatch(/^(?:[A-Za-z-]+: .*\r\n(?:\t.*\r\n)*)+$/);
    expect(body.endsWith('BUY NOW\r\n')).toBe(true);
  });
});
