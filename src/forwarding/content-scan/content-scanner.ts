import { Injectable, Logger } from '@nestjs/common';
import { rfc5322Date } from '../../common/rfc5322-date';
import { AppConfigService } from '../../config/app-config.service';
import type { Domain } from '../../domains/domain.entity';
import { INBOUND_FILTERING_DEFAULTS, InboundFiltering } from '../../domains/domain-settings';
import { inboundContentScans } from '../../metrics/metrics';
import { printable } from '../received-message';
import type { ReceivedTransaction } from '../received-transaction';
import { refusedAttachment } from './attachment-types';
import { scanForVirus } from './clamd-client';
import { ScannerFailure } from './scanner-socket';
import { checkSpam, spamdExcerpt, SpamVerdict } from './spamd-client';

/** A virus name or file name quoted in an SMTP reply is cut to this many characters. */
const MAX_QUOTED = 100;

/** The SMTP answer to a message its content check refuses (554) or could not finish (451). */
export interface ScanRefusal {
  responseCode: 451 | 554;
  message: string;
}

/** What the scanners said: undefined for one the operator does not run. */
export interface ScanResults {
  /** The virus clamd found, null for none. */
  virus?: string | null | ScannerFailure;
  spam?: SpamVerdict | ScannerFailure;
}

/** The settings a message for these domains meets: the lowest spam threshold; programs only if every one takes them. */
export function strictestFiltering(domains: readonly Domain[]): InboundFiltering {
  const settings = domains.map((d) => ({ ...INBOUND_FILTERING_DEFAULTS, ...d.settings.inboundFiltering }));
  return {
    spamThreshold: Math.min(...settings.map((s) => s.spamThreshold)),
    allowExecutableAttachments: settings.every((s) => s.allowExecutableAttachments),
  };
}

/**
 * A virus, then a score at the threshold (SpamAssassin's own rule: spam from `score >= required`), refuse for good;
 * a scanner without a verdict defers the message (451), so that nothing unscanned is forwarded and nothing is lost.
 */
export function verdict(results: ScanResults, spamThreshold: number): ScanRefusal | null {
  const { virus, spam } = results;
  if (typeof virus === 'string')
    return { responseCode: 554, message: `5.7.1 Message refused: it contains a virus (${printable(virus, MAX_QUOTED)})` };
  if (spam && !(spam instanceof ScannerFailure) && spam.score >= spamThreshold) {
    return { responseCode: 554, message: `5.7.1 Message refused as spam (score ${spam.score}, threshold ${spamThreshold})` };
  }
  if (virus instanceof ScannerFailure || spam instanceof ScannerFailure) {
    return { responseCode: 451, message: '4.3.0 Content scan unavailable, try again later' };
  }
  return null;
}

/**
 * The content check of mail to be forwarded (it goes out signed with the domain's key): attachments by type, then clamd
 * (INBOUND_CLAMD_ADDRESS) and spamd (INBOUND_SPAMD_ADDRESS) side by side, against the domains' inboundFiltering.
 */
@Injectable()
export class ContentScanner {
  private readonly logger = new Logger(ContentScanner.name);

  constructor(private readonly config: AppConfigService) {}

  /** Why the message must not be forwarded for these domains, or null to forward it. */
  async refusal(transaction: ReceivedTransaction, domains: readonly Domain[]): Promise<ScanRefusal | null> {
    if (domains.length === 0) return null;
    const filtering = strictestFiltering(domains);
    const about = `from <${transaction.mailFrom}> for ${[...new Set(domains.map((d) => d.name))].join(', ')}`;
    if (!filtering.allowExecutableAttachments) {
      const attachment = await this.refusedAttachment(transaction.source);
      if (attachment) {
        inboundContentScans.inc({ result: attachment.result });
        this.logger.log(`Refused a message ${about}: ${attachment.refusal.message}`);
        return attachment.refusal;
      }
    }
    const [virus, spam] = await Promise.all([this.scanForVirus(transaction.source), this.checkSpam(transaction)]);
    const refusal = verdict({ virus, spam }, filtering.spamThreshold);
    const failures = [virus, spam].filter((result) => result instanceof ScannerFailure);
    for (const failure of failures) this.logger.warn(`Deferred a message ${about}: ${failure.message}`);
    if (refusal?.responseCode === 554) {
      const rules = spam && !(spam instanceof ScannerFailure) ? ` (spamd ${spam.score}: ${spam.rules.join(',')})` : '';
      this.logger.log(`Refused a message ${about}: ${refusal.message}${rules}`);
    }
    inboundContentScans.inc({
      result: !refusal ? 'clean' : refusal.responseCode === 451 ? 'unavailable' : typeof virus === 'string' ? 'virus' : 'spam',
    });
    return refusal;
  }

  /**
   * The refusal of a message with a program or disk image attached, or null. A message mailparser cannot read is
   * refused too (554 5.6.0): its attachments cannot be checked, and the same bytes would fail again at every retry.
   */
  private async refusedAttachment(source: Buffer): Promise<{ result: 'attachment' | 'unreadable'; refusal: ScanRefusal } | null> {
    try {
      const refused = await refusedAttachment(source);
      if (!refused) return null;
      const name = printable(refused.filename ?? '', MAX_QUOTED);
      const message = `5.7.1 Message refused: the attachment${name ? ` "${name}"` : ''} is ${refused.kind}`;
      return { result: 'attachment', refusal: { responseCode: 554, message } };
    } catch (err) {
      this.logger.warn(`Could not read the attachments of a message: ${(err as Error).message}`);
      const message = '5.6.0 Message refused: it could not be parsed, so its attachments cannot be checked';
      return { result: 'unreadable', refusal: { responseCode: 554, message } };
    }
  }

  private async scanForVirus(source: Buffer): Promise<string | null | ScannerFailure | undefined> {
    const { INBOUND_CLAMD_ADDRESS: address, INBOUND_CLAMD_TIMEOUT_MS: timeoutMs } = this.config.env;
    if (!address) return undefined;
    return scanForVirus(address, source, timeoutMs).catch(failure);
  }

  /**
   * spamd gets the message with a Received field of ours on top, as it will be forwarded: SpamAssassin finds the
   * client's address there (for its DNS block lists) and counts the hop. Of a message past INBOUND_SPAMD_MAX_BYTES it
   * gets the header section and both ends of the body (spamdExcerpt): padding one end does not push the other out.
   */
  private async checkSpam(transaction: ReceivedTransaction): Promise<SpamVerdict | ScannerFailure | undefined> {
    const { INBOUND_SPAMD_ADDRESS: address, INBOUND_SPAMD_TIMEOUT_MS: timeoutMs, INBOUND_SPAMD_MAX_BYTES: maxBytes } = this.config.env;
    if (!address) return undefined;
    const received = Buffer.from(receivedField(transaction, this.config.inboundHostname), 'latin1');
    const message = Buffer.concat([received, spamdExcerpt(transaction.source, maxBytes - received.length)]);
    return checkSpam(address, message, timeoutMs).catch(failure);
  }
}

function failure(err: unknown): ScannerFailure {
  return err instanceof ScannerFailure ? err : new ScannerFailure((err as Error).message);
}

function receivedField(transaction: ReceivedTransaction, hostname: string): string {
  const helo = printable(transaction.helo, 200, false) || 'unknown';
  const name = printable(transaction.clientHostname ?? '', 200, false) || 'unknown';
  const protocol = transaction.secure ? 'ESMTPS' : 'ESMTP';
  return `Received: from ${helo} (${name} [${transaction.clientAddress}])\r\n\tby ${hostname} (Mailroom) with ${protocol};\r\n\t${rfc5322Date(new Date())}\r\n`;
}
