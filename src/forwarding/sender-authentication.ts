import type { AuthenticateResult } from 'mailauth';
import { hostMatchesDomain } from '../common/domain-match';

/**
 * What the authentication of a received message says about its author's domain (the From header), DMARC's way:
 * `pass` when SPF or DKIM passed for a domain aligned with it (relaxed alignment, or the domain's own `aspf`/`adkim`
 * when it publishes a record), `fail` when neither did, `unknown` when a lookup that could have given such a pass
 * failed, or the DMARC record could not be read, or there is no single From address to judge.
 */
export type AuthorAuthentication = 'pass' | 'fail' | 'unknown';

/** An SMTP refusal of the message: what InboundRefusal carries. */
export interface Refusal {
  responseCode: number;
  message: string;
}

/** A received message's authentication (mailauth's results), reduced to what forwarding decides on. */
export interface SenderAuthentication {
  /** The addresses of the From header (all of its fields), as mailauth read them. */
  fromAddresses: string[];
  /** The organizational domain of the single From address (DMARC's, from the public suffix list), else null. */
  organizationalDomain: string | null;
  author: AuthorAuthentication;
  /**
   * The policy the From domain publishes (`sp` for a subdomain), null without a DMARC record, `unknown` when the
   * record could not be looked up (a DNS failure: it may say reject).
   */
  policy: 'reject' | 'quarantine' | 'none' | 'unknown' | null;
  /** A DKIM signature that passed and aligns with From: it survives forwarding, so DMARC passes after it too. */
  alignedDkim: boolean;
}

/** The reduction of mailauth's results. */
export function senderAuthentication(result: AuthenticateResult): SenderAuthentication {
  const fromAddresses = result.dkim.headerFrom.map((address) => address.toLowerCase());
  const dmarc = result.dmarc;
  if (fromAddresses.length !== 1 || !dmarc) {
    return { fromAddresses, organizationalDomain: null, author: 'unknown', policy: null, alignedDkim: false };
  }
  const organizationalDomain = dmarc.domain.toLowerCase();
  const aligned = (domain: string | undefined) => domain !== undefined && hostMatchesDomain(domain, [organizationalDomain]);
  const alignedSignatures = result.dkim.results.filter((r) => aligned(r.signingDomain));
  const dkimRelaxed = alignedSignatures.some((r) => r.status.result === 'pass');
  const spf = result.spf && aligned(result.spf.domain) ? result.spf.status.result : null;
  // A failed lookup may have hidden a pass only where a pass would count for the author's domain: a signature by
  // its organization, SPF of a MAIL FROM domain in it. Anyone can add a signature whose key lookup fails.
  const hidden = [spf, ...alignedSignatures.map((r) => r.status.result)].some((r) => r === 'temperror' || r === 'temperr');
  switch (dmarc.status.result) {
    case 'pass':
    case 'fail':
      return {
        fromAddresses,
        organizationalDomain,
        author: dmarc.status.result === 'fail' && hidden ? 'unknown' : dmarc.status.result,
        policy: policyOf(dmarc.policy),
        alignedDkim: Boolean(dmarc.alignment?.dkim?.result),
      };
    case 'none': {
      // No record: nothing to obey, but whether the domain authenticated the message still decides what we do with it.
      const author = spf === 'pass' || dkimRelaxed ? 'pass' : hidden ? 'unknown' : 'fail';
      return { fromAddresses, organizationalDomain, author, policy: null, alignedDkim: dkimRelaxed };
    }
    default: {
      // temperror: the record could not be read, so neither can what it asks for. A pass for exactly the From domain
      // passes DMARC whatever the record says (strict alignment included): such mail is not held up by a lame _dmarc.
      const fromDomain = fromAddresses[0].slice(fromAddresses[0].lastIndexOf('@') + 1);
      const exact = (r: { signingDomain?: string; status: { result: string } }) =>
        r.signingDomain?.toLowerCase() === fromDomain && r.status.result === 'pass';
      const dkimExact = result.dkim.results.some(exact);
      const spfResult = result.spf || null;
      const spfExact = spfResult?.domain?.toLowerCase() === fromDomain && spfResult.status.result === 'pass';
      const author = dkimExact || spfExact ? 'pass' : 'unknown';
      return { fromAddresses, organizationalDomain, author, policy: 'unknown', alignedDkim: dkimExact };
    }
  }
}

/**
 * Why a message must not be taken for an account whose verified domains are `ownDomains`, or null:
 * - a From header without exactly one address (RFC 5322 asks for one; DMARC cannot judge others, receivers such as
 *   Gmail refuse them);
 * - a From domain aligned with one of the account's own domains, unless the message passed DMARC for it;
 * - a From domain publishing `p=reject` when the message failed DMARC;
 * - a 451 (the sending server tries again) when a lookup failed that decides one of these: the DMARC record of any
 *   From domain, or a lookup that could have passed DMARC for an own domain or a p=reject one.
 * Every forwarding domain is one of `ownDomains`: no message whose From aligns with it is taken unauthenticated,
 * which is what lets its DKIM key sign every forwarded message (signingAllowed).
 */
export function refusalOf(auth: SenderAuthentication, ownDomains: readonly string[]): Refusal | null {
  if (auth.fromAddresses.length > 1) {
    return { responseCode: 550, message: '5.7.1 The From header holds several addresses: DMARC needs one author address' };
  }
  if (auth.fromAddresses.length === 0) {
    return { responseCode: 550, message: '5.7.1 The From header holds no author address: DMARC needs one author address' };
  }
  const domain = auth.organizationalDomain;
  // An address without a domain (`user@`, `<@>`): no author domain to judge, as for no address at all.
  if (!domain) {
    return { responseCode: 550, message: '5.7.1 The From header holds no author address: DMARC needs one author address' };
  }
  const fromDomain = auth.fromAddresses[0].slice(auth.fromAddresses[0].lastIndexOf('@') + 1);
  const own = ownDomains.some((name) => hostMatchesDomain(name, [domain]));
  if (own && auth.author === 'fail') {
    return {
      responseCode: 550,
      message:
        `5.7.1 Unauthenticated mail from ${fromDomain} is not accepted: it is a domain of this address's owner, and the ` +
        'message did not pass DMARC for it (no SPF or DKIM pass aligned with the From domain)',
    };
  }
  if (auth.policy === 'unknown' && auth.author !== 'pass') {
    return {
      responseCode: 451,
      message: `4.4.3 Could not look up the DMARC policy of ${fromDomain} (a DNS lookup failed), try again later`,
    };
  }
  if (auth.author === 'unknown' && (own || auth.policy === 'reject')) {
    return { responseCode: 451, message: `4.4.3 Could not authenticate mail from ${fromDomain} (a DNS lookup failed), try again later` };
  }
  if (auth.policy === 'reject' && auth.author === 'fail') {
    return {
      responseCode: 550,
      message:
        `5.7.1 Unauthenticated mail from ${fromDomain} is not accepted due to the domain's DMARC policy (p=reject): ` +
        'no SPF or DKIM pass aligned with the From domain',
    };
  }
  return null;
}

/**
 * Whether the forwarded copy gets a From of the forwarding domain: its author's domain asks receivers to reject or
 * quarantine what fails DMARC, and the message passed only by SPF, which no forward keeps (the receiver sees our
 * address, not the author's). Messages that failed are never rewritten: that would make them pass.
 */
export function needsFromRewrite(auth: SenderAuthentication, forwardingDomain: string): boolean {
  if (auth.author !== 'pass' || auth.alignedDkim || !auth.organizationalDomain) return false;
  // An unreadable policy may be p=reject: a message that passed by SPF alone is rewritten as if it were.
  if (auth.policy !== 'reject' && auth.policy !== 'quarantine' && auth.policy !== 'unknown') return false;
  // Our own signature aligns with such a From already.
  return !hostMatchesDomain(forwardingDomain, [auth.organizationalDomain]);
}

/**
 * Whether the forwarding domain's key may sign the forwarded copy (it does at delivery, d=<forwarding domain>): never
 * for a From aligned with that domain unless the message was authenticated for it, or the From is now ours.
 */
export function signingAllowed(auth: SenderAuthentication, forwardingDomain: string, fromRewritten: boolean): boolean {
  if (fromRewritten || auth.author === 'pass') return true;
  if (auth.fromAddresses.length !== 1 || !auth.organizationalDomain) return false;
  return !hostMatchesDomain(forwardingDomain, [auth.organizationalDomain]);
}

function policyOf(policy: string | undefined): SenderAuthentication['policy'] {
  const value = policy?.toLowerCase();
  return value === 'reject' || value === 'quarantine' || value === 'none' ? value : null;
}
