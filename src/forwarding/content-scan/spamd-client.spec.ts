import { ScannerFailure } from './scanner-socket';
import { parseSpamdReply } from './spamd-client';

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
