import type { Domain } from '../../domains/domain.entity';
import { strictestFiltering, verdict } from './content-scanner';
import { ScannerFailure } from './scanner-socket';

const domain = (inboundFiltering?: Domain['settings']['inboundFiltering']) => ({ settings: { inboundFiltering } }) as Domain;
const spam = (score: number) => ({ score, requiredScore: 5, rules: [] });
const down = new ScannerFailure('spamd at 127.0.0.1:783: connect ECONNREFUSED');

describe('strictestFiltering', () => {
  it('is the defaults for a domain without settings, and the strictest of several domains', () => {
    expect(strictestFiltering([domain()])).toEqual({ spamThreshold: 5, allowExecutableAttachments: false });
    expect(
      strictestFiltering([
        domain({ spamThreshold: 8, allowExecutableAttachments: true }),
        domain({ spamThreshold: 3, allowExecutableAttachments: true }),
      ]),
    ).toEqual({ spamThreshold: 3, allowExecutableAttachments: true });
    expect(strictestFiltering([domain({ spamThreshold: 8, allowExecutableAttachments: true }), domain()])).toEqual({
      spamThreshold: 5,
      allowExecutableAttachments: false,
    });
  });
});

describe('verdict', () => {
  it('forwards what no scanner objects to, scanners that are not run included', () => {
    expect(verdict({}, 5)).toBeNull();
    expect(verdict({ virus: null, spam: spam(4.9) }, 5)).toBeNull();
  });

  it('refuses a virus, then a score at or above the threshold, for good', () => {
    expect(verdict({ virus: 'Eicar-Test-Signature', spam: spam(1000) }, 5)).toEqual({
      responseCode: 554,
      message: '5.7.1 Message refused: it contains a virus (Eicar-Test-Signature)',
    });
    expect(verdict({ virus: null, spam: spam(5) }, 5)).toEqual({
      responseCode: 554,
      message: '5.7.1 Message refused as spam (score 5, threshold 5)',
    });
  });

  it('defers (451) when a scanner gave no verdict, unless the other one found enough to refuse', () => {
    const deferred = { responseCode: 451, message: '4.3.0 Content scan unavailable, try again later' };
    expect(verdict({ spam: down }, 5)).toEqual(deferred);
    expect(verdict({ virus: down, spam: spam(0) }, 5)).toEqual(deferred);
    expect(verdict({ virus: 'X\r\n250 Ok', spam: down }, 5)).toEqual({
      responseCode: 554,
      message: '5.7.1 Message refused: it contains a virus (X250 Ok)',
    });
    expect(verdict({ virus: down, spam: spam(12) }, 5)?.responseCode).toBe(554);
  });
});
