import { parseClamdReply } from './clamd-client';
import { ScannerFailure } from './scanner-socket';

describe('parseClamdReply', () => {
  it('reads a clean stream and the name of the virus found', () => {
    expect(parseClamdReply(Buffer.from('stream: OK\0'))).toBeNull();
    expect(parseClamdReply(Buffer.from('stream: Win.Test.EICAR_HDB-1 FOUND\0'))).toBe('Win.Test.EICAR_HDB-1');
  });

  it('fails on an error, such as a message past StreamMaxLength', () => {
    expect(() => parseClamdReply(Buffer.from('INSTREAM size limit exceeded. ERROR\0'))).toThrow(
      new ScannerFailure('clamd: "INSTREAM size limit exceeded. ERROR"'),
    );
    expect(() => parseClamdReply(Buffer.alloc(0))).toThrow(ScannerFailure);
  });
});
