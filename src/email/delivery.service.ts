import { createPrivateKey } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DomainsService } from '../domains/domains.service';
import { SuppressionService } from '../suppression/suppression.service';
import { DeliverableMessage, EmailRepository, NewEvent } from './email.repository';
import { composeMime } from './message-content';
import { AWAITING_DELIVERY, MessageStatus } from './message.entity';
import { SendPacer } from './send-pacer';
import { classifySmtpError, describeSmtpError, SmtpErrorLike } from './smtp-outcome';
import { DkimKey, MAIL_TRANSPORT, MailTransport, RecipientRejection } from './transport/mail-transport';

/** Thrown to make Bull retry the job later (D-20 schedule). */
export class DeferredDelivery extends Error {}

export interface AttemptInfo {
  /** 1 for the first attempt. */
  attempt: number;
  isLastAttempt: boolean;
}

const SIGNING_KEY_CACHE_MS = 60_000;

/**
 * One delivery attempt of a message (D-20): paced, DKIM-signed, sent to the recipients still pending; the
 * SMTP answers decide the next state. 250 → sent; 5xx → bounced + suppression; 4xx or no answer →
 * deferred and retried, until the last attempt → failed.
 */
@Injectable()
export class DeliveryService {
  private readonly logger = new Logger(DeliveryService.name);
  private readonly signingKeys = new Map<string, { key: DkimKey | null; expires: number }>();

  constructor(
    private readonly repository: EmailRepository,
    private readonly domains: DomainsService,
    private readonly suppression: SuppressionService,
    private readonly pacer: SendPacer,
    @Inject(MAIL_TRANSPORT) private readonly transport: MailTransport,
  ) {}

  async deliver(messageId: string, info: AttemptInfo): Promise<void> {
    const message = await this.repository.findForDelivery(messageId);
    if (!message || !AWAITING_DELIVERY.includes(message.status)) return; // cancelled, or done by an earlier run

    const dkim = await this.signingKey(message);
    const raw = await composeMime(message.id, message.headerMessageId, message.content);
    await this.pacer.acquire();

    let accepted: string[] = [];
    let rejected: RecipientRejection[] = [];
    let response = '';
    try {
      ({ accepted, rejected, response } = await this.transport.send({
        messageId,
        from: message.fromAddress,
        recipients: message.pendingRecipients,
        raw,
        dkim,
      }));
    } catch (err) {
      // The server took the message for nobody: per-recipient answers when RCPT failed, else one for all.
      const error = err as SmtpErrorLike & { rejectedErrors?: (SmtpErrorLike & { recipient?: string })[] };
      rejected = message.pendingRecipients.map((recipient) => {
        const own = error.rejectedErrors?.find((e) => e.recipient === recipient) ?? error;
        return { recipient, responseCode: own.responseCode, response: describeSmtpError(own) };
      });
    }
    await this.record(message, info, accepted, rejected, response);
  }

  private async record(message: DeliverableMessage, info: AttemptInfo, accepted: string[], rejected: RecipientRejection[], response: string): Promise<void> {
    const now = new Date();
    const events: NewEvent[] = [];
    const bounced = rejected.filter((r) => classifySmtpError(r) === 'permanent');
    const temporary = rejected.filter((r) => classifySmtpError(r) === 'temporary');

    if (accepted.length) {
      const partial = accepted.length < message.pendingRecipients.length;
      if (partial) events.push(...accepted.map((recipient): NewEvent => ({ type: 'sent', recipient, detail: response, occurredAt: now })));
      else events.push({ type: 'sent', detail: response, occurredAt: now });
    }
    events.push(...bounced.map((r): NewEvent => ({ type: 'bounced', recipient: r.recipient, detail: r.response, occurredAt: now })));

    const pending = temporary.map((r) => r.recipient);
    let status: MessageStatus;
    if (pending.length === 0) {
      status = accepted.length || message.sentAt ? 'sent' : 'bounced';
    } else if (info.isLastAttempt) {
      status = accepted.length || message.sentAt ? 'sent' : 'failed';
      events.push(...temporary.map((r): NewEvent => ({ type: 'failed', recipient: r.recipient, detail: `gave up after ${message.attempts + 1} attempts: ${r.response}`, occurredAt: now })));
    } else {
      status = 'deferred';
      events.push(...temporary.map((r): NewEvent => ({ type: 'deferred', recipient: r.recipient, detail: r.response, occurredAt: now })));
    }
    // Bounced recipients of a message others received leave it `sent`; the per-recipient events tell.

    const lastError = [...bounced, ...temporary][0]?.response ?? null;
    const moved = await this.repository.recordAttempt(message.id, {
      status,
      pendingRecipients: status === 'deferred' ? pending : [],
      attempts: message.attempts + 1,
      lastError,
      ...(accepted.length && !message.sentAt ? { sentAt: now } : {}),
    }, events);
    if (!moved) return;

    for (const r of bounced) {
      await this.suppression.add(message.accountId, r.recipient, 'bounced', message.id).catch((err: Error) =>
        this.logger.error(`Could not suppress ${r.recipient} after a bounce of ${message.id}: ${err.message}`),
      );
    }
    if (status === 'deferred') throw new DeferredDelivery(lastError ?? 'deferred');
  }

  private async signingKey(message: DeliverableMessage): Promise<DkimKey | null> {
    const cacheKey = `${message.accountId}/${message.fromDomain}`;
    const cached = this.signingKeys.get(cacheKey);
    if (cached && cached.expires > Date.now()) return cached.key;
    const domain = await this.domains.findVerified(message.accountId, message.fromDomain);
    const pem = domain ? this.domains.signingKey(domain) : null;
    const key = pem ? { ...pem, privateKey: createPrivateKey(pem.privateKey) } : null;
    if (!key) this.logger.warn(`${message.fromDomain} is no longer verified: ${message.id} goes out without a DKIM signature`);
    this.signingKeys.set(cacheKey, { key, expires: Date.now() + SIGNING_KEY_CACHE_MS });
    return key;
  }
}
