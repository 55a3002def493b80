import { generateKeyPairSync } from 'node:crypto';
import { authenticate, dkimSign } from 'mailauth';
import {
  AuthorAuthentication,
  needsFromRewrite,
  refusalOf,
  SenderAuthentication,
  senderAuthentication,
  signingAllowed,
} from './sender-authentication';

const CLIENT = '192.0.2.10';
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const KEY_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** DNS as the tests publish it: TXT records by name; a name listed in `failing` times out. */
const TXT: Record<string, string> = {
  'spf-only.test': `v=spf1 ip4:${CLIENT} -all`,
  '_dmarc.spf-only.test': 'v=DMARC1; p=reject',
  'news.test': 'v=spf1 -all',
  '_dmarc.news.test': 'v=DMARC1; p=reject',
  [`s1._domainkey.news.test`]: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  '_dmarc.fwd.test': 'v=DMARC1; p=reject',
  '_dmarc.quiet.test': 'v=DMARC1; p=none',
  '_dmarc.careful.test': 'v=DMARC1; p=quarantine',
  'corp.test': `v=spf1 ip4:${CLIENT} -all`,
};
const failing = new Set<string>();

function resolve(name: string, type: string): Promise<string[][]> {
  const key = name.toLowerCase();
  if (failing.has(key)) return Promise.reject(Object.assign(new Error(`timed out: ${name}`), { code: 'ETIMEOUT' }));
  if (type === 'TXT' && TXT[key]) return Promise.resolve([[TXT[key]]]);
  return Promise.reject(Object.assign(new Error(`not found: ${name}`), { code: 'ENOTFOUND' }));
}

function message(from: string, extra = ''): Buffer {
  return Buffer.from(`From: ${from}\r\nTo: info@fwd.test\r\nSubject: hi\r\nMessage-ID: <1@x.test>\r\n${extra}\r\nHello.\r\n`);
}

async function judge(source: Buffer, sender: string): Promise<SenderAuthentication> {
  const result = await authenticate(source, {
    ip: CLIENT,
    helo: 'client.test',
    sender,
    mta: 'mx.test',
    resolver: resolve,
    disableBimi: true,
  });
  return senderAuthentication(result);
}

async function signed(source: Buffer): Promise<Buffer> {
  const key = { signingDomain: 'news.test', selector: 's1', privateKey: KEY_PEM };
  const { signatures } = await dkimSign(source, { ...key, signatureData: [key] });
  return Buffer.concat([Buffer.from(signatures), source]);
}

describe('sender authentication at DATA', () => {
  afterEach(() => failing.clear());

  it('refuses mail spoofing the forwarding domain (no SPF pass, no signature) with 550 5.7.1, and would never sign it', async () => {
    const auth = await judge(message('boss@fwd.test'), 'boss@fwd.test');
    expect(auth).toMatchObject({ author: 'fail', organizationalDomain: 'fwd.test', policy: 'reject' });
    expect(refusalOf(auth, ['fwd.test'])).toEqual({
      responseCode: 550,
      message: expect.stringMatching(/^5\.7\.1 Unauthenticated mail from fwd\.test/),
    });
    expect(signingAllowed(auth, 'fwd.test', false)).toBe(false);
  });

  it("refuses a subdomain of an own domain, and another of the account's domains, whatever their DMARC record", async () => {
    const sub = await judge(message('boss@news.fwd.test'), 'boss@news.fwd.test');
    expect(refusalOf(sub, ['fwd.test'])?.responseCode).toBe(550);
    // corp.test publishes no DMARC record: still the account's own, and SPF fails for another client.
    const corp = await judge(message('ceo@corp.test'), 'bounce@elsewhere.test');
    expect(corp).toMatchObject({ author: 'fail', policy: null });
    expect(refusalOf(corp, ['fwd.test', 'corp.test'])?.responseCode).toBe(550);
    expect(refusalOf(corp, ['fwd.test'])).toBeNull(); // someone else's domain without a policy: forwarded as it is
  });

  it('takes own-domain mail authenticated by an aligned SPF pass even without a DMARC record', async () => {
    const auth = await judge(message('ceo@corp.test'), 'ceo@corp.test');
    expect(auth.author).toBe('pass');
    expect(refusalOf(auth, ['fwd.test', 'corp.test'])).toBeNull();
  });

  it('answers 451 4.4.3 for own-domain mail whose lookups failed, and forwards a stranger whose policy is unknown', async () => {
    failing.add('_dmarc.fwd.test');
    const own = await judge(message('boss@fwd.test'), 'boss@fwd.test');
    expect(own.author).toBe('unknown');
    expect(refusalOf(own, ['fwd.test'])).toEqual({ responseCode: 451, message: expect.stringMatching(/^4\.4\.3 /) });
    failing.add('_dmarc.news.test');
    expect(refusalOf(await judge(message('x@news.test'), 'x@news.test'), ['fwd.test'])).toBeNull();
  });

  it('refuses a p=reject stranger failing DMARC; p=none and p=quarantine failures are forwarded unchanged', async () => {
    const reject = await judge(message('ceo@news.test'), 'ceo@news.test');
    expect(refusalOf(reject, ['fwd.test'])?.message).toMatch(/^5\.7\.1 .*DMARC policy \(p=reject\)/);
    for (const from of ['x@quiet.test', 'x@careful.test']) {
      const auth = await judge(message(from), from);
      expect(auth.author).toBe('fail');
      expect(refusalOf(auth, ['fwd.test'])).toBeNull();
      expect(needsFromRewrite(auth, 'fwd.test')).toBe(false);
      expect(signingAllowed(auth, 'fwd.test', false)).toBe(true);
    }
  });

  it('rewrites the From of a p=reject author authenticated by SPF only, not of one with an aligned DKIM signature', async () => {
    const spfOnly = await judge(message('Alice <alice@spf-only.test>'), 'alice@spf-only.test');
    expect(spfOnly).toMatchObject({ author: 'pass', policy: 'reject', alignedDkim: false });
    expect(needsFromRewrite(spfOnly, 'fwd.test')).toBe(true);
    // Forwarded by a domain of the author's own organization, our signature aligns: nothing to rewrite.
    expect(needsFromRewrite(spfOnly, 'mail.spf-only.test')).toBe(false);

    const dkim = await judge(await signed(message('news@news.test')), 'bounce@elsewhere.test');
    expect(dkim).toMatchObject({ author: 'pass', policy: 'reject', alignedDkim: true });
    expect(needsFromRewrite(dkim, 'fwd.test')).toBe(false);
    expect(refusalOf(dkim, ['fwd.test'])).toBeNull();
  });

  it('refuses a From with several addresses and takes one without any', async () => {
    const several = await judge(message('a@news.test, b@fwd.test'), 'a@news.test');
    expect(refusalOf(several, ['fwd.test'])).toEqual({ responseCode: 550, message: expect.stringMatching(/^5\.7\.1 .*several addresses/) });
    expect(signingAllowed(several, 'fwd.test', false)).toBe(false);
    const none = await judge(Buffer.from('To: info@fwd.test\r\nSubject: no author\r\n\r\nHi\r\n'), 'x@quiet.test');
    expect(refusalOf(none, ['fwd.test'])).toBeNull();
    expect(signingAllowed(none, 'fwd.test', false)).toBe(true);
  });

  it('never lets the forwarding domain sign a message it takes whose From aligns with it unless it passed DMARC', () => {
    // Every reachable combination: what refusalOf takes must be signable by any of the account's domains.
    const authors: AuthorAuthentication[] = ['pass', 'fail', 'unknown'];
    const policies: SenderAuthentication['policy'][] = ['reject', 'quarantine', 'none', null];
    const fromDomains = ['fwd.test', 'sub.fwd.test', 'corp.test', 'stranger.test'];
    const ownDomains = ['fwd.test', 'mail.corp.test'];
    for (const author of authors)
      for (const policy of policies)
        for (const alignedDkim of [false, true])
          for (const from of fromDomains) {
            const organizationalDomain = from.split('.').slice(-2).join('.');
            const auth: SenderAuthentication = { fromAddresses: [`x@${from}`], organizationalDomain, author, policy, alignedDkim };
            if (refusalOf(auth, ownDomains)) continue;
            for (const forwardingDomain of ownDomains) {
              const rewritten = needsFromRewrite(auth, forwardingDomain);
              expect({ from, author, forwardingDomain, allowed: signingAllowed(auth, forwardingDomain, rewritten) }).toMatchObject({
                allowed: true,
              });
              if (author !== 'pass') expect(rewritten).toBe(false);
            }
          }
  });
});
