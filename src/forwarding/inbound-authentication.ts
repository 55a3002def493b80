import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { Injectable, Logger } from '@nestjs/common';
import { authenticate, type AuthenticateResult, type DNSResolver, sealMessage } from 'mailauth';
import { ExpiringMap } from '../common/expiring-map';
import { AppConfigService } from '../config/app-config.service';
import type { Domain } from '../domains/domain.entity';
import { DomainsService } from '../domains/domains.service';
import type { ReceivedTransaction } from './received-transaction';
import { envelopeSenderAuthenticated } from './envelope-sender';
import { Author, rewriteFrom, withoutForgedResults } from './header-rewriting';
import { InboundRefusal } from './inbound-refusal';
import { needsFromRewrite, Refusal, refusalOf, SenderAuthentication, senderAuthentication, signingAllowed } from './sender-authentication';

/**
 * All of a message's lookups (SPF, DKIM and ARC keys) get this many DNS_TIMEOUT_MS; then the rest fail at once. The
 * DMARC record, looked up last, has one DNS_TIMEOUT_MS of its own beyond them (budgetedResolver).
 */
const LOOKUP_BUDGET_TIMEOUTS = 5;
/** An account's verified domains are read once per this period. */
const OWN_DOMAINS_CACHE_MS = 1000;

/** A received message as authenticated at DATA: what mailauth found, and what forwarding decides on. */
export interface InboundVerdict {
  sender: SenderAuthentication;
  /** Our Authentication-Results field (authserv-id: the inbound hostname), CRLF-terminated. */
  authenticationResults: string;
  /** The chain validation and the results an ARC set of ours records, null when the chain must not be sealed. */
  arc: { cv: string; authResults: string } | null;
  /** Set when the message must not be taken. */
  refusal: Refusal | null;
  /** MAIL FROM passed SPF, or DKIM for a domain aligned with it: only such a sender is told of a failed forward. */
  envelopeSenderAuthenticated: boolean;
}

/** What a forwarding domain sends: header fields to put on top of `source`, and `source`, the received bytes edited. */
export interface ForwardedCopy {
  headers: string;
  source: Buffer;
}

/**
 * SPF, DKIM, DMARC and ARC of received mail (mailauth), at DATA: mail that fails DMARC for one of the account's own
 * domains, or for a domain publishing p=reject, is refused before anything is stored; what is forwarded carries our
 * Authentication-Results and an ARC set sealed with the forwarding domain's DKIM key, and its From is rewritten to the
 * forwarding domain when its author's domain would otherwise fail DMARC after the forward (needsFromRewrite).
 */
@Injectable()
export class InboundAuthentication {
  private readonly logger = new Logger(InboundAuthentication.name);
  private readonly hostname: string;
  private readonly ownDomains = new ExpiringMap<string, Promise<string[]>>(OWN_DOMAINS_CACHE_MS);

  constructor(
    private readonly config: AppConfigService,
    private readonly domains: DomainsService,
  ) {
    this.hostname = config.inboundHostname;
  }

  /** The verdict on a message that is forwarded (or returned) for some of its recipients; null when none is. */
  async verdict(transaction: ReceivedTransaction): Promise<InboundVerdict | null> {
    const accountIds = new Set(transaction.routes.flatMap((r) => (r.kind === 'report' ? [] : [r.domain.accountId])));
    if (accountIds.size === 0) return null;
    const result = await authenticate(transaction.source, {
      ip: clientIp(transaction.clientAddress),
      ...(transaction.helo ? { helo: transaction.helo } : {}),
      ...(transaction.mailFrom ? { sender: transaction.mailFrom } : {}),
      mta: this.hostname,
      resolver: budgetedResolver(this.config.dnsServers, this.config.env.DNS_TIMEOUT_MS, LOOKUP_BUDGET_TIMEOUTS),
      disableBimi: true,
    });
    const sender = senderAuthentication(result);
    let refusal: Refusal | null = null;
    for (const accountId of accountIds) {
      refusal = refusalOf(sender, await this.ownDomainsOf(accountId));
      if (refusal) break;
    }
    return {
      sender,
      authenticationResults: authenticationResultsOf(result),
      arc: sealable(result),
      refusal,
      envelopeSenderAuthenticated: envelopeSenderAuthenticated(result, transaction.mailFrom),
    };
  }

  /**
   * The copy one forwarding domain sends: the received bytes (our forged results removed, the From rewritten when
   * needed) under our results and an ARC set sealed with the domain's key. A 550 5.7.1 InboundRefusal when the
   * domain's key could sign a message that was not authenticated for it: refusalOf keeps such messages out, this is
   * the last guard, and a message it stops would be stopped again at every retry (a 451 would be retried for days).
   */
  async copyFor(verdict: InboundVerdict, domain: Domain, received: Buffer, author: Author): Promise<ForwardedCopy> {
    const fromRewritten = needsFromRewrite(verdict.sender, domain.name);
    if (!signingAllowed(verdict.sender, domain.name, fromRewritten)) {
      const from = verdict.sender.fromAddresses.join(', ') || 'no From address';
      this.logger.error(
        `${domain.name} would have signed mail from ${from} that it did not authenticate (${verdict.sender.author}): refused`,
      );
      throw new InboundRefusal(
        550,
        `5.7.1 Message refused: it was not authenticated for its From domain, and ${domain.name} would sign it`,
      );
    }
    let source = withoutForgedResults(received, this.hostname);
    if (fromRewritten) source = rewriteFrom(source, { name: author.name, address: verdict.sender.fromAddresses[0] }, domain.name);
    if (!verdict.arc) return { headers: verdict.authenticationResults, source };
    const key = this.domains.signingKey(domain);
    // mailauth's type of the seal options lacks the authResults and cv its documentation gives sealMessage.
    const seal = await sealMessage(source, {
      signingDomain: key.domainName,
      selector: key.keySelector,
      privateKey: key.privateKey,
      authResults: verdict.arc.authResults,
      cv: verdict.arc.cv,
    } as Parameters<typeof sealMessage>[1]);
    return { headers: seal.toString('latin1') + verdict.authenticationResults, source };
  }

  private ownDomainsOf(accountId: string): Promise<string[]> {
    let names = this.ownDomains.get(accountId);
    if (!names) {
      names = this.domains.verifiedNames(accountId);
      this.ownDomains.set(accountId, names);
      names.catch(() => this.ownDomains.delete(accountId));
    }
    return names;
  }
}

/** The Authentication-Results field mailauth wrote (its other field, Received-SPF, says the same of SPF alone). */
function authenticationResultsOf(result: AuthenticateResult): string {
  const field = /^Authentication-Results:.*(?:\r\n[ \t].*)*\r\n/m.exec(result.headers);
  return field ? field[0] : '';
}

/**
 * What an ARC set of ours records: the chain's state as it came (cv) and our results. A chain that arrived broken
 * is sealed only when its last set claimed it whole (mailauth's shouldSeal), as RFC 8617 5.1.2 has it.
 */
function sealable(result: AuthenticateResult): InboundVerdict['arc'] {
  const arc = result.arc;
  if (!arc || !arc.authResults) return null;
  const cv = arc.status.result;
  if (cv !== 'none' && cv !== 'pass' && !arc.status.shouldSeal) return null;
  return { cv, authResults: arc.authResults };
}

/**
 * A resolver through DNS_SERVERS (the system's when empty), each query waiting at most DNS_TIMEOUT_MS once; after
 * `budget` such waits in all the remaining queries fail at once (a temporary error to mailauth), so that a DNS
 * server that does not answer holds the client's DATA for seconds, not minutes. The DMARC record (`_dmarc.` names,
 * asked last) has at least one DNS_TIMEOUT_MS from its first query whatever the others took: without it, a sender
 * could spend the budget on slow lookups of its own (signatures, SPF includes) and leave the policy unread.
 */
export function budgetedResolver(servers: readonly string[], timeoutMs: number, budget: number): DNSResolver {
  const shared = Date.now() + timeoutMs * budget;
  let dmarcDeadline: number | undefined;
  return async (name, type) => {
    let deadline = shared;
    if (/^_dmarc\./i.test(name)) {
      dmarcDeadline ??= Math.max(shared, Date.now() + timeoutMs);
      deadline = dmarcDeadline;
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw Object.assign(new Error(`DNS lookup of ${name} skipped: the lookups took too long`), { code: 'ETIMEOUT' });
    }
    const resolver = new dns.Resolver({ timeout: Math.min(timeoutMs, left), tries: 1 });
    if (servers.length) resolver.setServers([...servers]);
    return resolver.resolve(name, type as 'TXT');
  };
}

/** The client's address as SPF reads it: an IPv4-mapped IPv6 address is the IPv4 address. */
function clientIp(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped && isIP(mapped[1]) === 4 ? mapped[1] : address;
}
