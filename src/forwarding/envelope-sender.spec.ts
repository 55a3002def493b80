import type { AuthenticateResult } from 'mailauth';
import { envelopeSenderAuthenticated } from './envelope-sender';

type Results = Pick<AuthenticateResult, 'spf' | 'dkim'>;

const results = (spf: { domain: string; result: string } | null, dkim: { signingDomain: string; result: string }[] = []): Results =>
  ({
    spf: spf ? { domain: spf.domain, 'client-ip': '192.0.2.7', status: { result: spf.result } } : false,
    dkim: {
      headerFrom: ['author@origin.test'],
      envelopeFrom: false,
      results: dkim.map((d) => ({ signingDomain: d.signingDomain, status: { result: d.result }, info: '' })),
    },
  }) as Results;

describe('envelopeSenderAuthenticated', () => {
  it('takes an SPF pass for the MAIL FROM domain, and nothing short of a pass', () => {
    expect(envelopeSenderAuthenticated(results({ domain: 'origin.test', result: 'pass' }), 'Boss@Origin.test')).toBe(true);
    for (const result of ['none', 'neutral', 'softfail', 'fail', 'temperror', 'permerror']) {
      expect(envelopeSenderAuthenticated(results({ domain: 'origin.test', result }), 'boss@origin.test')).toBe(false);
    }
    // A pass for another name (the HELO's) says nothing about MAIL FROM.
    expect(envelopeSenderAuthenticated(results({ domain: 'mx.elsewhere.test', result: 'pass' }), 'boss@origin.test')).toBe(false);
  });

  it('takes a DKIM pass for the MAIL FROM domain, a parent of it or a subdomain of it', () => {
    const dkim = (signingDomain: string, result = 'pass') => results(null, [{ signingDomain, result }]);
    expect(envelopeSenderAuthenticated(dkim('origin.test'), 'boss@origin.test')).toBe(true);
    expect(envelopeSenderAuthenticated(dkim('origin.test'), 'bounces-1@mail.origin.test')).toBe(true);
    expect(envelopeSenderAuthenticated(dkim('mail.origin.test'), 'boss@origin.test')).toBe(true);
    expect(envelopeSenderAuthenticated(dkim('ORIGIN.test.'), 'boss@origin.test')).toBe(true);

    expect(envelopeSenderAuthenticated(dkim('origin.test', 'fail'), 'boss@origin.test')).toBe(false);
    expect(envelopeSenderAuthenticated(dkim('other.test'), 'boss@origin.test')).toBe(false);
    // A name that only ends like it is another domain.
    expect(envelopeSenderAuthenticated(dkim('fakeorigin.test'), 'boss@origin.test')).toBe(false);
    expect(envelopeSenderAuthenticated(dkim('news.origin.test'), 'boss@mail.origin.test')).toBe(false);
  });

  it('never authenticates the null sender', () => {
    expect(
      envelopeSenderAuthenticated(
        results({ domain: 'mx.origin.test', result: 'pass' }, [{ signingDomain: 'origin.test', result: 'pass' }]),
        '',
      ),
    ).toBe(false);
  });
});
