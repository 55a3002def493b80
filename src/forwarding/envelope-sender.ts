import type { AuthenticateResult } from 'mailauth';

/**
 * Whether a received message's envelope sender (MAIL FROM) was authenticated: SPF passed for its domain, or a DKIM
 * signature passed for a domain aligned with it. Alignment here is the same name or one a parent of the other (the owner
 * of a domain controls its subdomains); without the public suffix list, two sibling subdomains of one organization do
 * not count. Only such a sender is told when a forward fails after our 250: a notification to a forged MAIL FROM
 * reaches someone who sent nothing (backscatter). A null sender is never authenticated (it is never told anything).
 */
export function envelopeSenderAuthenticated(result: Pick<AuthenticateResult, 'spf' | 'dkim'>, mailFrom: string): boolean {
  const domain = domainOf(mailFrom);
  if (!domain) return false;
  if (result.spf && result.spf.status.result === 'pass' && normalized(result.spf.domain) === domain) return true;
  return result.dkim.results.some(
    (signature) => signature.status.result === 'pass' && related(normalized(signature.signingDomain), domain),
  );
}

function domainOf(address: string): string | null {
  const at = address.lastIndexOf('@');
  const domain = at < 0 ? '' : normalized(address.slice(at + 1));
  return domain === '' ? null : domain;
}

function normalized(domain: string | undefined): string {
  return (domain ?? '').trim().toLowerCase().replace(/\.$/, '');
}

function related(a: string, b: string): boolean {
  return a !== '' && (a === b || a.endsWith(`.${b}`) || b.endsWith(`.${a}`));
}
