import { createPrivateKey } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { ByteBudget } from '../common/byte-budget';
import { allFulfilled, MicroBatch } from '../common/micro-batch';
import type { Domain } from '../domains/domain.entity';
import { DomainChanges } from '../domains/domain-changes';
import { DomainsService } from '../domains/domains.service';
import { SuppressionService } from '../suppression/suppression.service';
import { TrackedContentService } from '../tracking/tracked-content.service';
import { DeliveredOutcome, DeliveredOutcomes } from './delivered-outcomes';
import { AppConfigService } from '../config/app-config.service';
import { isStored } from '../outbox/attachments/attachment-content';
import { AttachmentStore, AttachmentUnavailable } from '../outbox/attachments/attachment-store';
import { DKIM_SIGNED_HEADERS, DkimKey, signSource } from './dkim-signer';
import { composeDsn, isDsnContent } from './dsn-mime';
import { ForwardFailureReports } from './forward-failure-reports';
import { expired, expiredUnanswered, notSent, recordFailures, refused, reportsFailures, suppressedDestinations } from './forward-failures';
import { DeliverableMessage, DeliveryStore } from './delivery.store';
import { EVERY_RECIPIENT_SUPPRESSED, type NewEvent } from '../outbox/message-event.entity';
import { composeMime } from './message-content';
import { AWAITING_DELIVERY, MessageStatus } from '../outbox/message.entity';
import { RetrySchedule } from '../outbox/retry-schedule';
import { ProviderHealth } from './provider-health';
import { RecipientCopy, recipientCopies, sendCopies } from './recipient-copies';
import { ReturnPaths } from './return-path';
import { SendPacer } from './send-pacer';
import { classifySmtpError, providerRefusal, refusedByProvider, suppressesRecipient } from './smtp-outcome';
import { bufferSource, MAIL_TRANSPORT, MailTransport, MessageSource, ProviderFailure } from './transport/mail-transport';

/** Thrown to make Bull retry the job later (D-20 schedule). */
export class DeferredDelivery extends Error {}

/**
 * Thrown when a scheduled message's job runs before the message's time (promoted, or retried, by hand in Bull
 * Board): the job goes back to wait until `due`. Not an attempt: nothing is counted or written.
 */
export class NotYetDue extends Error {
  constructor(readonly due: Date) {
    super(`scheduled for ${due.toISOString()}: not sent before then`);
  }
}

/** An error of ours whose message the sender may read in the message's events. */
export class DeliveryError extends Error {}

/** The provider answered, but the answer could not be written: retried without counting an attempt. */
class OutcomeNotRecorded extends Error {}

export interface AttemptInfo {
  /** 1 for the first attempt; counted over every job the message had (EmailQueue.attemptOf). */
  attempt: number;
  isLastAttempt: boolean;
}

/** What an attempt came to, before it is written. */
interface AttemptOutcome extends DeliveredOutcome {
  /** The provider failed the transaction as a whole: every recipient it was for stays pending. */
  providerFailure?: string;
}

const SIGNING_KEY_CACHE_MS = 60_000;

/**
 * One delivery attempt of a message (D-20): paced, DKIM-signed, sent to the recipients still pending; the
 * SMTP answers decide the next state. Recipients: 250 → sent; a 5xx to their RCPT TO → bounced, and suppressed if
 * the answer is about the address (suppressesRecipient); a 4xx → deferred. The provider failing the transaction
 * as a whole (AUTH, MAIL FROM, DATA, TLS, no connection) says nothing about the recipients: the message is
 * deferred and nobody is suppressed. Deferred messages are retried until the last attempt → failed; an error of
 * ours counts as an attempt too.
 */
@Injectable()
export class DeliveryService {
  private readonly logger = new Logger(DeliveryService.name);
  private readonly signingKeys = new Map<string, { domainId: string; key: DkimKey; expires: number }>();
  /** The domain lookups of concurrent attempts: one query per distinct domain. */
  private readonly verifiedDomains = new MicroBatch<DomainLookup, Domain | null>((lookups) => this.findVerifiedDomains(lookups), 100, 2);
  /** What this thread's deliveries hold loaded at once (DELIVERY_BATCH_BYTES). */
  private readonly budget: ByteBudget;
  /** The queue's schedule (EmailQueue's backoff): when a deferred message's next attempt is due. */
  private readonly retrySchedule: RetrySchedule;

  constructor(
    private readonly store: DeliveryStore,
    private readonly domains: DomainsService,
    private readonly suppression: SuppressionService,
    private readonly pacer: SendPacer,
    private readonly outcomes: DeliveredOutcomes,
    private readonly providerHealth: ProviderHealth,
    private readonly trackedContent: TrackedContentService,
    private readonly returnPaths: ReturnPaths,
    @Inject(MAIL_TRANSPORT) private readonly transport: MailTransport,
    private readonly attachments: AttachmentStore,
    private readonly failureReports: ForwardFailureReports,
    config: AppConfigService,
    domainChanges: DomainChanges,
  ) {
    this.budget = new ByteBudget(config.env.DELIVERY_BATCH_BYTES);
    this.retrySchedule = new RetrySchedule(config.env.EMAIL_RETRY_FIRST_DELAY_MS);
    // A deleted domain's key is not used again, on any worker.
    domainChanges.register((change) => {
      if (!change?.name) return this.signingKeys.clear();
      this.signingKeys.delete(`${change.accountId}/${change.name}`);
      this.signingKeys.delete(`*/${change.name}`);
    });
  }

  /**
   * Rejects to have Bull retry the job: DeferredDelivery, NotYetDue (a scheduled message's job that ran early),
   * or an error of ours (counted as an attempt).
   */
  async deliver(messageId: string, info: AttemptInfo): Promise<void> {
    try {
      await this.attempt(messageId, info);
    } catch (err) {
      if (!(err instanceof DeferredDelivery) && !(err instanceof NotYetDue)) await this.countFailure(messageId, info, err as Error);
      throw err;
    }
  }

  private async attempt(messageId: string, info: AttemptInfo): Promise<void> {
    const [message, earlier] = await Promise.all([this.store.findForDelivery(messageId), this.outcomes.find(messageId)]);
    if (!message || !AWAITING_DELIVERY.includes(message.status)) return; // cancelled, or done by an earlier run
    // The queue's delay is only a hint: whatever was done to the job, the message's own time holds.
    if (message.status === 'scheduled' && message.scheduledFor && message.scheduledFor.getTime() > Date.now()) {
      throw new NotYetDue(message.scheduledFor);
    }
    if (earlier && sameRecipients(earlier.pending, message.pendingRecipients)) {
      // Sent by an earlier attempt whose outcome did not reach the row: write it, do not send again.
      return this.record(message, info, earlier);
    }

    // A message that waited (scheduled, or deferred) is held to the suppression list and its domain as they are now.
    const waited = message.status !== 'queued';
    const [dkim, suppressed] = await Promise.all([
      this.signingKey(message, waited),
      waited ? this.suppressedNow(message) : ([] as string[]),
    ]);
    if (!dkim && !message.systemSender) {
      return this.fail(message, `${message.fromDomain} is no longer a verified domain of this account: the message is not sent unsigned`);
    }
    const recipients = message.pendingRecipients.filter((r) => !suppressed.includes(r));
    const outcome: AttemptOutcome = { pending: message.pendingRecipients, suppressed, accepted: [], rejected: [], response: '' };
    if (recipients.length === 0) return this.record(message, info, outcome);

    // What sending loads (the content, a forwarded message's bytes) waits for room in this thread; attachments stream.
    // It is loaded and signed before the pacer's wait, so that a slot is taken just before its send: the room is held
    // through that wait (deliveries behind it would wait for the pacer all the same).
    const release = await this.budget.acquire(message.loadBytes);
    try {
      // One transaction, or one per recipient for a message whose copies differ by their unsubscribe links (recipient-copies.ts).
      const { copies, compose } = await this.sources(message, recipients);
      const signed = async (copy: RecipientCopy) => {
        const composed = await compose(copy);
        return dkim ? signSource(composed, dkim) : composed;
      };
      // Each copy is built just before its send and dropped after it: an attempt never holds all its copies.
      let next: MessageSource | undefined = await signed(copies[0]);
      await this.pacer.acquire(recipients.length);
      if (message.status === 'scheduled' && !(await this.store.claimScheduled(message.id))) return; // cancelled meanwhile

      try {
        const from = message.envelopeFrom ?? this.returnPaths.address(message.id);
        const { lateFailure, ...answers } = await sendCopies(
          copies,
          async (copy) => {
            const source = next ?? (await signed(copy));
            next = undefined;
            return this.transport.send({ messageId, from, recipients: copy.recipients, source });
          },
          {
            // Kept as the copies go: after a worker died between them, the next attempt does not send them again.
            onCopy: (sofar) => this.outcomes.save(message.id, { ...outcome, ...sofar }),
            onLateError: (err) => this.logger.warn(`A copy of ${messageId} failed; its recipients and the rest wait: ${err.message}`),
          },
        );
        Object.assign(outcome, answers);
        // Relaying denied to every recipient (5.7.x and the like at RCPT TO) is the provider refusing our mail.
        const refusal = lateFailure ?? providerRefusal(answers);
        if (refusal)
          void this.providerHealth.failing(refusal, lateFailure ? undefined : 'the refused recipients fail, nobody is suppressed');
        else this.providerHealth.working();
      } catch (err) {
        if (!(err instanceof ProviderFailure)) throw err;
        outcome.providerFailure = err.description;
        void this.providerHealth.failing(err.description);
      }
    } catch (err) {
      // A stored attachment that cannot be read now never will be: no later attempt could send the message.
      if (!(err instanceof AttachmentUnavailable)) throw err;
      await this.fail(message, err.message);
      return;
    } finally {
      release();
    }
    if (outcome.accepted.length) await this.outcomes.save(message.id, outcome);
    await this.record(message, info, outcome);
  }

  private async record(message: DeliverableMessage, info: AttemptInfo, outcome: AttemptOutcome): Promise<void> {
    const now = new Date();
    const { suppressed, accepted, providerFailure } = outcome;
    const tried = outcome.pending.filter((r) => !suppressed.includes(r));
    const permanent = outcome.rejected.filter((r) => classifySmtpError(r) === 'permanent');
    // Refused by the provider (relaying denied): failed for this message, not bounced, never suppressed (D-39).
    const refusedByRelay = permanent.filter(refusedByProvider);
    const bounced = permanent.filter((r) => !refusedByProvider(r));
    const temporary = outcome.rejected.filter((r) => classifySmtpError(r) === 'temporary');
    const events: NewEvent[] = suppressed.map((recipient) => ({
      type: 'suppressed',
      recipient,
      detail: 'put on the suppression list after the message was accepted',
      occurredAt: now,
    }));

    if (accepted.length) {
      const partial = accepted.length < tried.length;
      if (partial)
        events.push(...accepted.map((recipient): NewEvent => ({ type: 'sent', recipient, detail: outcome.response, occurredAt: now })));
      else events.push({ type: 'sent', detail: outcome.response, occurredAt: now });
    }
    events.push(...bounced.map((r): NewEvent => ({ type: 'bounced', recipient: r.recipient, detail: r.response, occurredAt: now })));
    events.push(
      ...refusedByRelay.map((r): NewEvent => ({
        type: 'failed',
        recipient: r.recipient,
        detail: `refused by the SMTP provider: ${r.response}`,
        occurredAt: now,
      })),
    );

    // A provider failure keeps every recipient of the transaction pending, and is one event of the message.
    const pending = providerFailure ? tried : temporary.map((r) => r.recipient);
    // Counted over all of the message's jobs: a job the sweeper added again goes on from the message's attempts.
    const attempts = message.attempts + 1;
    const isLastAttempt = info.isLastAttempt || attempts >= this.retrySchedule.maxAttempts;
    const delivered = accepted.length > 0 || message.sentAt !== null;
    let status: MessageStatus;
    if (pending.length === 0) {
      status = delivered ? 'sent' : bounced.length ? 'bounced' : 'failed';
      if (status === 'failed' && refusedByRelay.length === 0)
        events.push({ type: 'failed', detail: EVERY_RECIPIENT_SUPPRESSED, occurredAt: now });
    } else if (isLastAttempt) {
      status = delivered ? 'sent' : 'failed';
      if (providerFailure)
        events.push({ type: 'failed', detail: `gave up after ${attempts} attempts: ${providerFailure}`, occurredAt: now });
      events.push(
        ...temporary.map((r): NewEvent => ({
          type: 'failed',
          recipient: r.recipient,
          detail: `gave up after ${attempts} attempts: ${r.response}`,
          occurredAt: now,
        })),
      );
    } else {
      status = 'deferred';
      if (providerFailure) events.push({ type: 'deferred', detail: providerFailure, occurredAt: now });
      events.push(...temporary.map((r): NewEvent => ({ type: 'deferred', recipient: r.recipient, detail: r.response, occurredAt: now })));
    }
    // Bounced recipients of a message others received leave it `sent`; the per-recipient events tell.

    const lastError = providerFailure ?? [...refusedByRelay, ...bounced, ...temporary][0]?.response ?? null;
    // What a forwarded message's sender is owed a notification for, recorded with the move (D-31): destinations put on
    // the suppression list while it waited (typically by another message's bounce), refused, or given up on.
    const expiredNow = status !== 'deferred' && pending.length > 0;
    const failures = reportsFailures(message)
      ? [
          ...suppressedDestinations(suppressed),
          ...[...bounced, ...refusedByRelay].map(refused),
          ...(expiredNow ? (providerFailure ? expiredUnanswered(pending) : temporary.map(expired)) : []),
        ]
      : [];
    let moved: boolean;
    try {
      moved = await this.store.recordAttempt(
        message.id,
        {
          status,
          pendingRecipients: status === 'deferred' ? pending : [],
          attempts,
          lastError,
          // Kept for the sweeper: a job it adds again for the message waits until then (D-20's place, not its start).
          nextAttemptAt: status === 'deferred' ? this.retrySchedule.nextAttemptAt(attempts, now) : null,
          ...(accepted.length && !message.sentAt ? { sentAt: now } : {}),
        },
        events,
        failures.length ? recordFailures(message.id, failures) : undefined,
      );
    } catch (err) {
      if (accepted.length) throw new OutcomeNotRecorded((err as Error).message);
      throw err;
    }
    if (accepted.length) this.outcomes.forget(message.id);
    if (!moved) return;
    if (failures.length) await this.failureReports.report(message.id);

    if (refusedByRelay.length) {
      // One line per message, however many of its recipients the provider refused.
      this.logger.error(
        `${message.id} failed: the SMTP provider refused ${refusedByRelay.map((r) => r.recipient).join(', ')} ` +
          `(${refusedByRelay[0].response}): not suppressed; check the relay's credentials and settings (SMTP_URL)`,
      );
    }
    for (const r of bounced) {
      if (!suppressesRecipient({ replyCode: r.responseCode, text: r.response })) {
        this.logger.error(
          `${message.id} was refused at ${r.recipient} for a reason other than the address (${r.response}): not suppressed; ` +
            'a policy or content refusal usually means the relay, its configuration or the content is at fault',
        );
        continue;
      }
      await this.suppression
        .add(message.accountId, r.recipient, 'bounced', message.id)
        .catch((err: Error) => this.logger.error(`Could not suppress ${r.recipient} after a bounce of ${message.id}: ${err.message}`));
    }
    if (status === 'deferred') throw new DeferredDelivery(lastError ?? 'deferred');
  }

  /**
   * The bytes to send, of each copy: a forwarded message as it was received, under the trace fields added when it
   * was taken (D-31); any other composed from its content, tracked (its click links recorded before it can leave), a
   * copy for one recipient with that recipient's unsubscribe links, its stored attachments read as it is sent.
   */
  private async sources(message: DeliverableMessage, recipients: string[]): Promise<Sources> {
    const asIs = (source: MessageSource): Sources => ({
      copies: recipientCopies(message, recipients, null),
      compose: () => Promise.resolve(source),
    });
    if (message.inboundMessageId) {
      const received = await this.store.receivedSource(message.inboundMessageId);
      if (!received) throw new DeliveryError(`the received message ${message.inboundMessageId} is gone`);
      return asIs(bufferSource(received));
    }
    const content = message.content ?? (await this.store.contentForDelivery(message.id));
    if (!content) throw new DeliveryError('the message is gone');
    if (isDsnContent(content)) return asIs(bufferSource(composeDsn(message.id, message.headerMessageId, content)));
    const shared = await this.trackedContent.contentToSend({ ...message, content });
    const own = (recipient: string) => this.trackedContent.contentFor(message.id, shared, recipient);
    return {
      copies: recipientCopies(message, recipients, { shared, own }),
      compose: async ({ unsubscribeFor }) => {
        const copy = unsubscribeFor ? own(unsubscribeFor) : shared;
        const compose = () => composeMime(message.id, message.headerMessageId, copy, (attachment) => this.attachments.open(attachment));
        // Most mail (small, loaded with its row, nothing stored apart) is composed once, then signed and sent from its
        // bytes; the rest is composed at each reading (DKIM's body hash, then the send) rather than held whole.
        if (message.content && !copy.attachments.some(isStored)) return bufferSource(await buffer(compose()));
        return compose;
      },
    };
  }

  /** Ends a message that must not go out at all. */
  private async fail(message: DeliverableMessage, reason: string): Promise<void> {
    const failures = reportsFailures(message) ? notSent(message.pendingRecipients) : [];
    const moved = await this.store.recordAttempt(
      message.id,
      { status: 'failed', pendingRecipients: [], attempts: message.attempts + 1, lastError: reason, nextAttemptAt: null },
      [{ type: 'failed', detail: reason, occurredAt: new Date() }],
      failures.length ? recordFailures(message.id, failures) : undefined,
    );
    if (moved && failures.length) await this.failureReports.report(message.id);
  }

  /** Counts an attempt that ended in an error of ours; on the last one the message is failed. Never rejects. */
  private async countFailure(messageId: string, info: AttemptInfo, error: Error): Promise<void> {
    if (error instanceof OutcomeNotRecorded) {
      this.logger.warn(
        `${messageId} was sent but its outcome could not be written (${error.message}): the next attempt writes it without sending`,
      );
      return;
    }
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    const log = `Attempt ${info.attempt} of ${messageId} failed: ${error.message}${cause}`;
    if (info.isLastAttempt) this.logger.error(`${log}; the message is failed`);
    else this.logger.warn(log);
    const description = error instanceof DeliveryError ? error.message : 'internal error (details in the server log)';
    const failed = await this.store
      .countFailedAttempt(
        messageId,
        description,
        info.isLastAttempt,
        info.isLastAttempt ? null : this.retrySchedule.nextAttemptAt(info.attempt, new Date()),
      )
      .catch((err: Error) => this.logger.warn(`Could not count the failed attempt of ${messageId}: ${err.message}`));
    if (failed && info.isLastAttempt) await this.failureReports.report(messageId);
  }

  /** The pending recipients put on the suppression list since the message was accepted. */
  private async suppressedNow(message: DeliverableMessage): Promise<string[]> {
    const suppressed = await this.suppression.suppressedAmong(message.accountId, message.pendingRecipients);
    return message.pendingRecipients.filter((r) => suppressed.has(r.toLowerCase()));
  }

  /**
   * The domain's key, or null when it is no longer verified; `fresh` asks the database, not the cache. A
   * system sender's domain is looked up in every account (the operator verifies it).
   */
  private async signingKey(message: DeliverableMessage, fresh: boolean): Promise<DkimKey | null> {
    const lookup: DomainLookup = { accountId: message.systemSender ? null : message.accountId, name: message.fromDomain };
    const cacheKey = `${lookup.accountId ?? '*'}/${lookup.name}`;
    const cached = this.signingKeys.get(cacheKey);
    if (!fresh && cached && cached.expires > Date.now()) return cached.key;
    const domain = await this.verifiedDomains.submit(lookup);
    if (!domain) {
      this.signingKeys.delete(cacheKey);
      return null;
    }
    // Parsing the PEM costs more than a signature: the key of the same domain row is kept.
    let key = cached?.domainId === domain.id ? cached.key : null;
    if (!key) {
      try {
        const pem = this.domains.signingKey(domain);
        key = { ...pem, privateKey: createPrivateKey(pem.privateKey), headerFieldNames: DKIM_SIGNED_HEADERS };
      } catch (err) {
        throw new DeliveryError(`the DKIM key of ${domain.name} could not be read`, { cause: err });
      }
    }
    if (this.signingKeys.size > 10_000) this.signingKeys.clear();
    this.signingKeys.set(cacheKey, { domainId: domain.id, key, expires: Date.now() + SIGNING_KEY_CACHE_MS });
    return key;
  }

  private async findVerifiedDomains(lookups: DomainLookup[]): Promise<PromiseSettledResult<Domain | null>[]> {
    const id = (l: DomainLookup) => `${l.accountId ?? '*'}/${l.name}`;
    const distinct = [...new Map(lookups.map((l) => [id(l), l])).values()];
    const find = (l: DomainLookup) =>
      l.accountId === null ? this.domains.findVerifiedByName(l.name) : this.domains.findVerified(l.accountId, l.name);
    const found = new Map(await Promise.all(distinct.map(async (l) => [id(l), await find(l)] as const)));
    return allFulfilled(lookups.map((l) => found.get(id(l)) ?? null));
  }
}

/** The transactions an attempt sends, and the bytes of each. */
interface Sources {
  copies: RecipientCopy[];
  compose: (copy: RecipientCopy) => Promise<MessageSource>;
}

/** A verified domain by name, in one account or (null) in whichever holds it. */
interface DomainLookup {
  accountId: string | null;
  name: string;
}

function sameRecipients(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((r) => b.includes(r));
}
