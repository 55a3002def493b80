import { Injectable, Logger } from '@nestjs/common';
import { simpleParser } from 'mailparser';
import { sha256Hex } from '../common/crypto/sha256';
import { AppException } from '../common/errors/app.exception';
import { ExpiringMap } from '../common/expiring-map';
import { newId } from '../common/ids';
import { AppConfigService } from '../config/app-config.service';
import type { Domain } from '../domains/domain.entity';
import { DomainsService } from '../domains/domains.service';
import { CompanionRow, type MessageWithEvents, recipientCount } from '../outbox/acceptance.repository';
import { type ForwardedEmail, OutboxService } from '../outbox/outbox.service';
import { ReturnPaths } from '../email/return-path';
import { reportedBounceType } from '../provider-events/provider-event-rules';
import { ProviderEventsService } from '../provider-events/provider-events.service';
import { SuppressionService } from '../suppression/suppression.service';
import { ContentScanner } from './content-scan/content-scanner';
import { parseDeliveryReport } from './delivery-report';
import { matchRule, RuleMatch, splitAddress } from './forwarding-rules';
import { InboundAuthentication, InboundVerdict } from './inbound-authentication';
import { InboundRefusal } from './inbound-refusal';
import { LoopTokens } from './loop-token';
import { HeaderField, headerFields, headerSection, loopOf, traceFields } from './received-message';
import type { InboundRoute, ReceivedTransaction } from './received-transaction';
import { SenderRewriting, SrsError } from './sender-rewriting';

/**
 * Verified domains (with their rules) are looked up once per this period per name, not at every RCPT TO: a
 * rule changed by PUT /domains applies to mail within a second.
 */
const DOMAIN_CACHE_MS = 1000;

/** The longest Message-ID kept as the message's own (the column's length); a longer one gets ours. */
const MAX_MESSAGE_ID = 300;

/**
 * Mail received for Mailroom's addresses (D-31): forwarding by each domain's rules with an SRS envelope sender,
 * bounces of forwarded mail back to their senders, and bounce reports about messages sent from here.
 */
@Injectable()
export class ForwardingService {
  private readonly logger = new Logger(ForwardingService.name);
  private readonly returnPathDomain: string;
  private readonly hostname: string;
  private readonly loopTokens: LoopTokens;
  private readonly verifiedDomains = new ExpiringMap<string, Promise<Domain | null>>(DOMAIN_CACHE_MS);

  constructor(
    private readonly domains: DomainsService,
    private readonly outbox: OutboxService,
    private readonly returnPaths: ReturnPaths,
    private readonly srs: SenderRewriting,
    private readonly providerEvents: ProviderEventsService,
    private readonly suppression: SuppressionService,
    private readonly contentScanner: ContentScanner,
    private readonly authentication: InboundAuthentication,
    config: AppConfigService,
  ) {
    this.returnPathDomain = config.returnPathDomain;
    this.hostname = config.inboundHostname;
    this.loopTokens = new LoopTokens(config.derivedKeys('mailroom loop v1'));
  }

  /**
   * The rule an address of the account's domain matches (`GET /domains/{domain}/forwarding/resolve`): 404 for a
   * domain the account does not have; an address on another domain is a 400.
   */
  async resolve(accountId: string, domainName: string, address: string) {
    const domain = await this.domains.get(accountId, domainName);
    const parts = address.includes('@') ? splitAddress(address) : { local: address, domain: domain.name };
    if (!parts || parts.domain !== domain.name) {
      throw AppException.invalidField('address', `must be an address on ${domain.name} (or its local part alone)`);
    }
    const full = `${parts.local}@${domain.name}`;
    const match = matchRule(domain.settings.forwarding, parts.local);
    const accepted = domain.status === 'verified' && match !== null;
    return {
      address: full,
      domain: domain.name,
      domainVerified: domain.status === 'verified',
      matched: match !== null,
      rule: match?.rule ?? null,
      destinations: match?.destinations ?? [],
      accepted,
      explanation: explain(domain, parts.local, match),
    };
  }

  /** Where mail for `address` goes; an InboundRefusal (550) for an address nobody takes mail for. */
  async route(address: string): Promise<InboundRoute> {
    const parts = splitAddress(address);
    if (!parts) throw new InboundRefusal(553, `5.1.3 <${address}>: Bad recipient address syntax`);
    if (parts.domain === this.returnPathDomain) {
      const messageId = this.returnPaths.messageOf(address);
      if (messageId) return { kind: 'report', address, messageId };
    }
    const domain = await this.verifiedDomain(parts.domain);
    if (!domain) throw unknownRecipient(address);
    if (SenderRewriting.isSrs(parts.local)) {
      try {
        return { kind: 'returned', address, domain, sender: this.srs.reverse(address) };
      } catch (err) {
        if (!(err instanceof SrsError)) throw err;
        // Answered as any unknown address: a distinct reply would tell a forger which guesses come close.
        this.logger.debug(`Refused RCPT TO:<${address}>: ${err.message}`);
        throw unknownRecipient(address);
      }
    }
    const match = matchRule(domain.settings.forwarding, parts.local);
    if (!match) throw unknownRecipient(address);
    if (!(await this.takesMail(domain.accountId, match.destinations))) throw disabledRecipient(address);
    return { kind: 'forward', address, domain, ...match };
  }

  /** Concurrent and repeated lookups of a name share one query for DOMAIN_CACHE_MS (a failed one is not kept). */
  private verifiedDomain(name: string): Promise<Domain | null> {
    let lookup = this.verifiedDomains.get(name);
    if (!lookup) {
      lookup = this.domains.findVerifiedByName(name);
      this.verifiedDomains.set(name, lookup);
      lookup.catch(() => this.verifiedDomains.delete(name));
    }
    return lookup;
  }

  /**
   * Whether any destination is off the account's suppression list: one lookup per RCPT TO, never cached (an address
   * taken off the list takes mail at once), concurrent ones sharing a query.
   */
  private async takesMail(accountId: string, destinations: readonly string[]): Promise<boolean> {
    const suppressed = await this.suppression.suppressedAmong(accountId, [...destinations]);
    return destinations.some((destination) => !suppressed.has(destination.toLowerCase()));
  }

  /**
   * Takes a message for its routes: refused whole (554) when it loops, or when it fails sender authentication
   * (InboundAuthentication: 550 5.7.1, 451 4.4.3); else the reports are applied and the forwarded messages
   * committed (the received bytes with them, as each domain forwards them) before this resolves, so that a 250 means
   * nothing is lost. Resolves with the queue ids of the stored messages.
   */
  async receive(transaction: ReceivedTransaction): Promise<string[]> {
    const fields = headerFields(headerSection(transaction.source));
    const forwards = transaction.routes.filter((r) => r.kind === 'forward');
    const loop = loopOf(
      fields,
      forwards.map((r) => r.address),
      (address) => this.loopTokens.marksOf(address),
    );
    if (loop) throw new InboundRefusal(554, `5.4.6 Routing loop detected: ${loop}`);
    // Bounces relayed back to their sender (SRS) go out signed by the domain too: scanned as forwards are.
    const scan = await this.contentScanner.refusal(
      transaction,
      transaction.routes.flatMap((r) => (r.kind === 'report' ? [] : [r.domain])),
    );
    if (scan) throw new InboundRefusal(scan.responseCode, scan.message);
    const verdict = await this.authentication.verdict(transaction);
    if (verdict?.refusal) throw new InboundRefusal(verdict.refusal.responseCode, verdict.refusal.message);

    const reports = transaction.routes.flatMap((r) => (r.kind === 'report' ? [r.messageId] : []));
    if (reports.length) await this.applyReport(transaction.source, reports);

    const byAccount = new Map<string, Map<string, InboundRoute[]>>();
    for (const route of transaction.routes) {
      if (route.kind === 'report') continue;
      const domains = byAccount.get(route.domain.accountId) ?? new Map<string, InboundRoute[]>();
      byAccount.set(route.domain.accountId, domains);
      domains.set(route.domain.id, [...(domains.get(route.domain.id) ?? []), route]);
    }
    if (byAccount.size === 0 || !verdict) return [];

    const summary = await summarize(transaction, fields);
    const stored = await Promise.all(
      [...byAccount].map(([accountId, domains]) => this.forward(accountId, [...domains.values()], transaction, summary, verdict)),
    );
    // Every destination went on the suppression list after RCPT TO: refused now, rather than taken and dropped.
    if (stored.every((ids) => ids.length === 0)) throw disabledRecipient(transaction.routes.find((r) => r.kind !== 'report')!.address);
    return stored.flat();
  }

  /** Stores the message once per domain of the account, and the messages forwarding it, in one commit. */
  private async forward(
    accountId: string,
    groups: InboundRoute[][],
    transaction: ReceivedTransaction,
    summary: Summary,
    verdict: InboundVerdict,
  ): Promise<string[]> {
    const messages: MessageWithEvents[] = [];
    const statements: CompanionRow[] = [];
    const receivedAt = new Date();
    for (const routes of groups) {
      const domain = (routes[0] as Extract<InboundRoute, { domain: Domain }>).domain;
      const id = newId('inb');
      const addresses = routes.map((r) => r.address);
      const base: Omit<ForwardedEmail, 'envelopeFrom' | 'to'> = {
        inboundMessageId: id,
        domain: domain.name,
        ...summary,
        headerMessageId: summary.headerMessageId ?? `<${id.slice(4)}@${domain.name}>`,
      };
      const destinations = routes.flatMap((r) => (r.kind === 'forward' ? r.destinations : []));
      const senders = routes.flatMap((r) => (r.kind === 'returned' ? [r.sender] : []));
      const made = await Promise.all([
        destinations.length
          ? this.outbox.forwarded(accountId, {
              ...base,
              envelopeFrom: this.srs.forward(transaction.mailFrom, domain.name),
              to: destinations,
            })
          : null,
        // A bounce goes back with the null sender, so that it can never bounce in turn.
        senders.length ? this.outbox.forwarded(accountId, { ...base, envelopeFrom: '', to: senders }) : null,
      ]);
      const forwarded = made.filter((m): m is MessageWithEvents => m !== null);
      if (forwarded.length === 0) continue; // suppressed since RCPT TO: nothing for this domain (receive() refuses when no domain has any)
      messages.push(...forwarded);
      const copy = await this.authentication.copyFor(verdict, domain, transaction.source, summary.from);
      statements.push({
        table: 'inbound_messages',
        values: {
          id,
          account_id: accountId,
          domain: domain.name,
          mail_from: transaction.mailFrom,
          mail_from_authenticated: verdict.envelopeSenderAuthenticated,
          recipients: JSON.stringify(addresses),
          client_address: transaction.clientAddress,
          helo: transaction.helo.slice(0, 255),
          trace:
            traceFields({
              id,
              clientAddress: transaction.clientAddress,
              clientHostname: transaction.clientHostname,
              helo: transaction.helo,
              hostname: this.hostname,
              secure: transaction.secure,
              recipients: addresses,
              loopTokens: addresses.map((address) => this.loopTokens.tokenOf(address)),
              receivedAt,
            }) + copy.headers,
          size: transaction.source.length,
          source: copy.source,
        },
      });
    }
    if (messages.length === 0) return [];
    // Forwarded mail spends forwards_per_month, one per recipient it goes to, never the account's emails (D-37).
    try {
      const forwards = recipientCount(messages);
      await this.outbox.accept({ messages, statements, metering: { accountId, emails: 0, submissions: 0, forwards } });
    } catch (err) {
      // A quota is whole again at its reset: the sending server keeps the message and tries again (4xx), as before.
      if (err instanceof AppException && err.status === 429) {
        const quota = typeof err.details?.quota === 'string' ? err.details.quota : 'Quota';
        throw new InboundRefusal(451, `4.7.1 ${quota} exhausted, try again later: ${err.message}`);
      }
      throw err;
    }
    return statements.map((s) => s.values.id as string);
  }

  /**
   * A bounce or complaint about messages sent from here (their VERP return paths): its recipients' outcomes
   * become events of those messages, as the provider's would (D-24). A message that is not a report is taken
   * and dropped: nobody reads mail sent to a return path.
   */
  private async applyReport(source: Buffer, messageIds: string[]): Promise<void> {
    const report = await parseDeliveryReport(source);
    if (!report || report.recipients.length === 0) {
      this.logger.log(`Dropped a message to the return path of ${messageIds.join(', ')}: not a delivery or feedback report`);
      return;
    }
    // Once per received report: the sender retries the same bytes after a 451 (a forward of the same transaction that
    // failed to commit, say), and that retry must not record its bounces again.
    await this.providerEvents.applyOnce(
      `inbound-report ${sha256Hex(source)} ${messageIds.join(' ')}`,
      messageIds.flatMap((messageId) =>
        report.recipients.map((r) => ({
          messageId,
          type: r.outcome,
          ...(r.recipient ? { recipient: r.recipient } : {}),
          reason: r.reason,
          suppresses: r.suppresses,
          ...(r.relayed ? { relayed: true } : {}),
          // A DSN that failed with a 4.x.x Status (the remote gave up after temporary failures) or a 5.2.x one (a full
          // mailbox) is a soft bounce: counted, not suppressed at once.
          ...(r.outcome === 'bounced' && r.status ? { bounceType: reportedBounceType(r.status, r.reason) } : {}),
        })),
      ),
    );
  }
}

type Summary = Pick<ForwardedEmail, 'from' | 'subject'> & { headerMessageId: string | null };

/** From, Subject and Message-ID of the received message, decoded, for its messages' status and listings. */
async function summarize(transaction: ReceivedTransaction, fields: HeaderField[]): Promise<Summary> {
  const head = fields.map((f) => `${f.name}: ${f.value}`).join('\r\n');
  const parsed = await simpleParser(Buffer.from(`${head}\r\n\r\n`, 'latin1'), {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipImageLinks: true,
  });
  const from = parsed.from?.value.find((m) => m.address);
  const messageId = parsed.messageId && parsed.messageId.length <= MAX_MESSAGE_ID ? parsed.messageId : null;
  return {
    from: from ? { name: from.name ?? '', address: from.address!.slice(0, 320) } : { name: '', address: transaction.mailFrom },
    subject: parsed.subject ?? '',
    headerMessageId: messageId,
  };
}

/** Every destination of the address is on the account's suppression list: nothing would be sent (RFC 3463 X.2.1). */
function disabledRecipient(address: string): InboundRefusal {
  return new InboundRefusal(550, `5.2.1 <${address}>: Recipient address rejected: mailbox disabled, not accepting messages`);
}

function unknownRecipient(address: string): InboundRefusal {
  return new InboundRefusal(550, `5.1.1 <${address}>: Recipient address rejected: no such user here`);
}

function explain(domain: Domain, local: string, match: RuleMatch | null): string {
  const address = `${local}@${domain.name}`;
  if (!match) return `No rule matches ${address}: mail for it is refused (550 5.1.1)`;
  const via = match.rule === '*' ? 'the wildcard rule *' : `the alias ${match.rule}`;
  const target = `${address} matches ${via} and goes to ${match.destinations.join(', ')}`;
  return domain.status === 'verified' ? target : `${target} once ${domain.name} is verified; until then mail for it is refused`;
}
