import { AppConfigService } from '../../config/app-config.service';
import type { Domain } from '../../domains/domain.entity';
import type { ReceivedTransaction } from '../received-transaction';
import { ContentScanner, strictestFiltering, verdict } from './content-scanner';
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

describe('ContentScanner', () => {
  // No spamd or clamd: only the attachment check runs.
  const scanner = new ContentScanner(AppConfigService.fromEnv({ INBOUND_SPAMD_ADDRESS: '', INBOUND_CLAMD_ADDRESS: '' }));
  const transaction = (source: string) =>
    ({
      mailFrom: 'a@origin.test',
      routes: [],
      source: Buffer.from(source),
      clientAddress: '192.0.2.1',
      helo: 'c.test',
      secure: false,
    }) as ReceivedTransaction;

  it('refuses for good a message whose attachments cannot be parsed (554 5.6.0), rather than forward it unchecked', async () => {
    const padding = `X-Padding: ${'x'.repeat(1024 * 1024 + 1)}`;
    const source = `From: a@origin.test\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n${padding}\r\n\r\nMZ\r\n--b--\r\n`;
    expect(await scanner.refusal(transaction(source), [domain()])).toEqual({
      responseCode: 554,
      message: '5.6.0 Message refused: it could not be parsed, so its attachments cannot be checked',
    });
    // A domain that takes programs does not parse it.
    expect(await scanner.refusal(transaction(source), [domain({ spamThreshold: 5, allowExecutableAttachments: true })])).toBeNull();
  });
});
