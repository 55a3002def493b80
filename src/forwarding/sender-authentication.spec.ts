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

/** `source` signed for `signingDomain` with the newsletter's key (which only s1._domainkey.news.test publishes). */
async function signed(source: Buffer, signingDomain = 'news.test', selector = 's1'): Promise<Buffer> {
  const key = { signingDomain, selector, privateKey: KEY_PEM };
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

  it('answers 451 4.4.3 for mail whose DMARC policy could not be looked up, own domain or not', async () => {
    failing.add('_dmarc.fwd.test');
    const own = await judge(message('boss@fwd.test'), 'boss@fwd.test');
    expect(own.author).toBe('unknown');
    expect(refusalOf(own, ['fwd.test'])).toEqual({ responseCode: 451, message: expect.stringMatching(/^4\.4\.3 /) });
    // A stranger whose policy is unknown may publish p=reject: it is not forwarded (and signed) until it can be read.
    failing.add('_dmarc.news.test');
    const stranger = await judge(message('x@news.test'), 'x@news.test');
    expect(stranger.policy).toBe('unknown');
    expect(refusalOf(stranger, ['fwd.test'])).toEqual({ responseCode: 451, message: expect.stringMatching(/^4\.4\.3 /) });
  });

  it('refuses a p=reject failure that carries a signature of another domain whose key lookup fails', async () => {
    // The signature could never have passed DMARC for news.test: its failed lookup hides nothing.
    failing.add('s1._domainkey.lame.attacker.test');
    const junk = await judge(await signed(message('ceo@news.test'), 'lame.attacker.test'), 'ceo@news.test');
    expect(junk).toMatchObject({ author: 'fail', policy: 'reject' });
    expect(refusalOf(junk, ['fwd.test'])).toEqual({ responseCode: 550, message: expect.stringMatching(/^5\.7\.1 .*p=reject/) });
    // Nor the SPF lookup of a MAIL FROM domain that is not the author's.
    failing.add('slow-spf.test');
    const spf = await judge(message('ceo@news.test'), 'bounce@slow-spf.test');
    expect(refusalOf(spf, ['fwd.test'])?.responseCode).toBe(550);
    // Mail spoofing an own domain that way is refused as well, not deferred.
    const own = await judge(await signed(message('boss@fwd.test'), 'lame.attacker.test'), 'bounce@slow-spf.test');
    expect(refusalOf(own, ['fwd.test'])?.responseCode).toBe(550);
    expect(signingAllowed(own, 'fwd.test', false)).toBe(false);
  });

  it('defers (451 4.4.3) a p=reject failure when a lookup that could have passed it failed', async () => {
    failing.add('s2._domainkey.news.test');
    const aligned = await judge(await signed(message('ceo@news.test'), 'news.test', 's2'), 'bounce@elsewhere.test');
    expect(aligned).toMatchObject({ author: 'unknown', policy: 'reject' });
    expect(refusalOf(aligned, ['fwd.test'])).toEqual({ responseCode: 451, message: expect.stringMatching(/^4\.4\.3 /) });
    failing.add('news.test');
    const spf = await judge(message('ceo@news.test'), 'ceo@news.test');
    expect(refusalOf(spf, ['fwd.test'])?.responseCode).toBe(451);
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

  it("takes mail that passed for exactly its From domain while that domain's DMARC record cannot be read", async () => {
    failing.add('_dmarc.news.test');
    // A DKIM pass for news.test passes DMARC whatever the unread record asks: forwarded as it is.
    const signedByAuthor = await judge(await signed(message('x@news.test')), 'bounce@elsewhere.test');
    expect(signedByAuthor).toMatchObject({ author: 'pass', policy: 'unknown', alignedDkim: true });
    expect(refusalOf(signedByAuthor, ['fwd.test'])).toBeNull();
    expect(needsFromRewrite(signedByAuthor, 'fwd.test')).toBe(false);
    // An SPF pass alone: taken, and its From rewritten as for p=reject, since the unread policy may be that.
    failing.add('_dmarc.spf-only.test');
    const spfOnly = await judge(message('alice@spf-only.test'), 'alice@spf-only.test');
    expect(spfOnly).toMatchObject({ author: 'pass', policy: 'unknown', alignedDkim: false });
    expect(refusalOf(spfOnly, ['fwd.test'])).toBeNull();
    expect(needsFromRewrite(spfOnly, 'fwd.test')).toBe(true);
  });

  it('refuses a From address without a domain as one without an address', async () => {
    const empty = await judge(message('<user@>'), 'x@quiet.test');
    expect(refusalOf(empty, ['fwd.test'])).toEqual({ responseCode: 550, message: expect.stringMatching(/^5\.7\.1 .*no author address/) });
  });

  it('refuses a From with several addresses, or with none', async () => {
    const several = await judge(message('a@news.test, b@fwd.test'), 'a@news.test');
    expect(refusalOf(several, ['fwd.test'])).toEqual({ responseCode: 550, message: expect.stringMatching(/^5\.7\.1 .*several addresses/) });
    expect(signingAllowed(several, 'fwd.test', false)).toBe(false);
    // An encoded word is no address (mail readers may still show it as one), a group may hold none, a From may be missing.
    const sources = [
      message('=?utf-8?Q?boss=40fwd.test?='),
      message('undisclosed:;'),
      Buffer.from('To: info@fwd.test\r\nSubject: no author\r\n\r\nHi\r\n'),
    ];
    for (const source of sources) {
      const none = await judge(source, 'x@quiet.test');
      expect(none.fromAddresses).toEqual([]);
      expect(refusalOf(none, ['fwd.test'])).toEqual({ responseCode: 550, message: expect.stringMatching(/^5\.7\.1 .*no author address/) });
      expect(signingAllowed(none, 'fwd.test', false)).toBe(false);
    }
  });

  it('never lets the forwarding domain sign a message it takes whose From aligns with it unless it passed DMARC', () => {
    // Every reachable combination: what refusalOf takes must be signable by any of the account's domains.
    const authors: AuthorAuthentication[] = ['pass', 'fail', 'unknown'];
    const policies: SenderAuthentication['policy'][] = ['reject', 'quarantine', 'none', 'unknown', null];
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
