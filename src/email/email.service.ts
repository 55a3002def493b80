import { Injectable } from '@nestjs/common';
import { AppException } from '../common/errors/app.exception';
import { ExpiringMap } from '../common/expiring-map';
import { ErrorCode } from '../common/errors/error-code';
import { hostMatchesDomain } from '../common/domain-match';
import { IdempotencyClaim, IdempotencyStore } from '../common/idempotency/idempotency.store';
import { newId } from '../common/ids';
import type { Domain } from '../domains/domain.entity';
import { DomainsService } from '../domains/domains.service';
import { TemplatesService } from '../templates/templates.service';
import { QuotaService } from '../quotas/quota.service';
import { creditStatement, EmailCredit } from '../quotas/usage-statement';
import { SuppressionService } from '../suppression/suppression.service';
import { TrackingTokens } from '../tracking/tracking-tokens';
import { MessageStatusDto } from './dto/message-status.dto';
import { SendEmailResponseDto } from './dto/send-email-response.dto';
import { SendEmailDto } from './dto/send-email.dto';
import { EmailQueue } from '../outbox/email.queue';
import { Acceptance, AcceptanceRepository, meteringOf } from '../outbox/acceptance.repository';
import { EmailRepository, MessageWithEvents, NewEvent } from './email.repository';
import { checkAttachments, checkBodySize, checkCustomHeaders, MAX_RECIPIENTS, parseMailbox, parseRecipients } from './message-content';
import { Message } from '../outbox/message.entity';
import { type AttachmentInput, prepareAttachments } from '../outbox/attachments/attachment-content';
import { AttachmentStore } from '../outbox/attachments/attachment-store';

const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 3600 * 1000;
/** A scheduled message can be cancelled until this long before its time. */
const CANCEL_MARGIN_MS = 1000;
/** Verified domains are looked up once per this period per account and name, not once per send. */
const DOMAIN_CACHE_MS = 10_000;

export interface SendOptions {
  /** The key's domain_restrictions (D-8): the `from` domain must be one of them or a subdomain. */
  allowedFromDomains?: readonly string[];
  /** The request's Idempotency-Key: its answer is stored with the message (D-17). */
  idempotency?: IdempotencyClaim;
}

/** A mailbox: display name (may be empty) and address. */
export interface Mailbox {
  name: string;
  address: string;
}

/** An email Mailroom composes itself for an account: form notifications and acknowledgments, confirmations. */
export interface ComposedEmail {
  from: Mailbox;
  /** From FORMS_FROM rather than a domain of the account (see Message.systemSender). */
  systemSender: boolean;
  to: string[];
  replyTo?: Mailbox[];
  subject: string;
  text: string;
  html: string;
  /** Content base64, or bytes. */
  attachments?: AttachmentInput[];
}

/** A received message Mailroom forwards as it arrived (D-31): its bytes are in inbound_messages. */
export interface ForwardedEmail {
  inboundMessageId: string;
  /** The forwarding domain, a verified domain of the account: its key signs the message. */
  domain: string;
  /** MAIL FROM: the SRS-rewritten sender, or '' for a bounce relayed back to its sender. */
  envelopeFrom: string;
  to: string[];
  /** From the received header, for the message's status and listings. */
  from: Mailbox;
  subject: string;
  /** The received Message-ID (with its angle brackets), or one made for it. */
  headerMessageId: string;
}

/** The rules of sending (D-14 … D-19): the only writer of new messages. */
@Injectable()
export class EmailService {
  private readonly domainCache = new ExpiringMap<string, Domain>(DOMAIN_CACHE_MS);

  constructor(
    private readonly repository: EmailRepository,
    private readonly acceptances: AcceptanceRepository,
    private readonly queue: EmailQueue,
    private readonly domains: DomainsService,
    private readonly templates: TemplatesService,
    private readonly suppression: SuppressionService,
    private readonly idempotency: IdempotencyStore,
    private readonly tokens: TrackingTokens,
    private readonly quotas: QuotaService,
    private readonly attachmentStore: AttachmentStore,
  ) {}

  /** Accepts a message: answers only after it is committed (D-16), then queues its delivery. */
  async send(accountId: string, dto: SendEmailDto, options: SendOptions = {}): Promise<SendEmailResponseDto> {
    const from = parseMailbox(dto.from);
    if (!from) throw AppException.invalidField('from', 'must be an email address, optionally with a name: Name <address>');
    const fromDomain = from.address.slice(from.address.lastIndexOf('@') + 1).toLowerCase();
    if (options.allowedFromDomains?.length && !hostMatchesDomain(fromDomain, options.allowedFromDomains)) {
      throw new AppException(ErrorCode.DomainNotAllowed, `This key may not send from ${fromDomain}`);
    }

    const to = parseRecipients('to', dto.to);
    const cc = parseRecipients('cc', dto.cc);
    const bcc = parseRecipients('bcc', dto.bcc);
    const count = to.length + cc.length + bcc.length;
    if (to.length === 0) throw AppException.invalidField('to', 'at least one recipient is required');
    if (count > MAX_RECIPIENTS)
      throw AppException.invalidField('to', `at most ${MAX_RECIPIENTS} recipients in to, cc and bcc together; got ${count}`);

    const { replyTo, custom } = checkCustomHeaders(dto.headers);
    // The id comes first: a tracked message's templates get its unsubscribe link.
    const id = newId('msg');
    const tracked = Boolean(dto.tracking?.opens || dto.tracking?.clicks || dto.tracking?.unsubscribe);
    const content = await this.content(accountId, dto, tracked ? this.tokens.unsubscribeUrl(id) : undefined);
    checkBodySize({ ...content, headers: custom });
    checkAttachments(dto.attachments);
    const scheduledFor = scheduleTime(dto.scheduleFor);

    if (!(await this.verifiedDomain(accountId, fromDomain))) {
      throw new AppException(ErrorCode.DomainNotVerified, `${fromDomain} is not a verified domain of this account`, { domain: fromDomain });
    }

    const { recipients, suppressed } = await this.unsuppressed(
      accountId,
      [...to, ...cc, ...bcc].map((m) => m.address),
    );
    if (recipients.length === 0) {
      throw new AppException(ErrorCode.AllRecipientsSuppressed, 'Every recipient is on the suppression list', { suppressed });
    }

    const acceptedAt = new Date();
    const headerMessageId = `<${id.slice(4)}@${fromDomain}>`;
    const attachments = prepareAttachments(dto.attachments);

    const status = scheduledFor ? 'scheduled' : 'queued';
    const message = Object.assign(new Message(), {
      id,
      accountId,
      status,
      fromAddress: from.address,
      fromDomain,
      subject: content.subject,
      recipients,
      pendingRecipients: recipients,
      suppressedRecipients: suppressed,
      headerMessageId,
      content: {
        from,
        to,
        cc,
        replyTo,
        ...content,
        headers: custom,
        attachments: attachments.references,
        date: acceptedAt.toISOString(),
      },
      priority: dto.priority ?? 'normal',
      scheduledFor,
      tracking: dto.tracking ? { ...dto.tracking } : null,
      listId: dto.list ?? null,
      templateName: dto.template ?? null,
      metadata: dto.metadata ?? null,
    } satisfies Partial<Message>);
    const events: NewEvent[] = [
      ...acceptanceEvents(suppressed, acceptedAt),
      ...(scheduledFor ? [{ type: 'scheduled', detail: scheduledFor.toISOString(), occurredAt: acceptedAt } satisfies NewEvent] : []),
    ];
    const answer: SendEmailResponseDto = { success: true, messageId: id, status, ...(suppressed.length ? { suppressed } : {}) };
    const { idempotency } = options;
    await this.idempotency.guard(idempotency, () =>
      this.accept({
        messages: [{ message, events, attachments: attachments.uploads }],
        idempotency: idempotency && { claim: idempotency, statusCode: 200, body: answer },
      }),
    );
    if (idempotency) idempotency.recorded = true;
    return answer;
  }

  /**
   * The message of an email Mailroom composed, recipients on the account's suppression list dropped; null
   * when none remain. Nothing is written: `accept` does that, with whatever else the request commits.
   */
  async compose(accountId: string, email: ComposedEmail): Promise<MessageWithEvents | null> {
    const { recipients, suppressed } = await this.unsuppressed(accountId, email.to);
    if (recipients.length === 0) return null;

    const id = newId('msg');
    const acceptedAt = new Date();
    const fromDomain = email.from.address.slice(email.from.address.lastIndexOf('@') + 1).toLowerCase();
    const attachments = prepareAttachments(email.attachments);
    const message = immediateMessage(accountId, id, {
      fromAddress: email.from.address,
      fromDomain,
      systemSender: email.systemSender,
      subject: email.subject,
      recipients,
      suppressedRecipients: suppressed,
      headerMessageId: `<${id.slice(4)}@${fromDomain}>`,
      content: {
        from: email.from,
        to: recipients.map((address) => ({ name: '', address })),
        cc: [],
        replyTo: email.replyTo ?? [],
        subject: email.subject,
        text: email.text,
        html: email.html,
        headers: {},
        attachments: attachments.references,
        date: acceptedAt.toISOString(),
      },
    });
    return { message, events: acceptanceEvents(suppressed, acceptedAt), attachments: attachments.uploads };
  }

  /**
   * The message forwarding a received one to its destinations (D-31), those on the account's suppression list
   * dropped; null when none remain. Nothing is written: `accept` does that, with the received message.
   */
  async forwarded(accountId: string, email: ForwardedEmail): Promise<MessageWithEvents | null> {
    const { recipients, suppressed } = await this.unsuppressed(accountId, email.to);
    if (recipients.length === 0) return null;
    const acceptedAt = new Date();
    const message = immediateMessage(accountId, newId('msg'), {
      fromAddress: email.from.address,
      fromDomain: email.domain,
      envelopeFrom: email.envelopeFrom,
      inboundMessageId: email.inboundMessageId,
      subject: email.subject,
      recipients,
      suppressedRecipients: suppressed,
      headerMessageId: email.headerMessageId,
      content: {
        from: email.from,
        to: recipients.map((address) => ({ name: '', address })),
        cc: [],
        replyTo: [],
        subject: email.subject,
        headers: {},
        attachments: [],
        date: acceptedAt.toISOString(),
      },
    });
    return { message, events: acceptanceEvents(suppressed, acceptedAt) };
  }

  /**
   * Counts what one request accepts against its account's quotas (D-13), stores the bytes of its attachments,
   * commits it in one statement with its usage and its references to those bytes (D-16, D-32), then queues each
   * message. The answer does not wait for Redis: enqueue() never rejects, and a job that fails to reach Redis is
   * re-added by the sweeper.
   */
  async accept(acceptance: Acceptance): Promise<void> {
    const metering = meteringOf(acceptance);
    const reservation = metering ? await this.quotas.reserve(metering) : null;
    try {
      // Bytes of a request that fails from here on are left unreferenced: the store's sweep deletes them.
      await this.attachmentStore.save(acceptance.messages.flatMap((m) => m.attachments ?? []));
      await this.acceptances.insert(acceptance);
    } catch (err) {
      await reservation?.release();
      throw err;
    }
    reservation?.committed();
    for (const { message } of acceptance.messages) {
      void this.queue.enqueue({ messageId: message.id, priority: message.priority, notBefore: message.scheduledFor });
    }
  }

  async status(accountId: string, messageId: string): Promise<MessageStatusDto> {
    const message = await this.repository.findForAccount(accountId, messageId);
    if (!message) throw AppException.notFound('Message', messageId);
    const events = await this.repository.events(messageId);
    return {
      messageId,
      status: message.status,
      events: events.map((e) => ({
        type: e.type,
        timestamp: e.occurredAt.toISOString(),
        ...(e.recipient ? { recipient: e.recipient } : {}),
        ...(e.detail ? { detail: e.detail } : {}),
        ...(e.type === 'clicked' && e.detail ? { url: e.detail } : {}),
        ...(e.machine ? { machine: true } : {}),
      })),
      ...(message.contentSweptAt ? { contentRemovedAt: message.contentSweptAt.toISOString() } : {}),
    };
  }

  /**
   * Cancels a scheduled message (D-18); 409 once it is due within a second or no longer scheduled. Its
   * recipients were counted at acceptance (one email each): they are given back with the cancel, in the hour
   * they were counted in. A cancel that loses gives nothing back.
   */
  async cancelScheduled(accountId: string, messageId: string): Promise<MessageStatusDto> {
    const message = await this.repository.findForAccount(accountId, messageId);
    if (!message) throw AppException.notFound('Message', messageId);
    // Only a `scheduled` message can be cancelled: a worker takes one (`scheduled` → `queued`) right before
    // sending it, so a cancel and a send never both win. The margin keeps a cancel from racing a due job.
    const scheduledAfter = new Date(Date.now() + CANCEL_MARGIN_MS);
    const credit: EmailCredit = { accountId, emails: message.recipients.length, countedAt: message.createdAt };
    await this.quotas.credit(credit, async () => {
      const cancelled = await this.repository.transition(
        messageId,
        ['scheduled'],
        { status: 'cancelled' },
        [{ type: 'cancelled' }],
        { scheduledAfter },
        (param) => creditStatement(credit, param),
      );
      if (cancelled) return;
      // Read again: a worker may have just taken it.
      const status = (await this.repository.findForAccount(accountId, messageId))?.status ?? message.status;
      const reason = status === 'scheduled' ? 'is due now' : `is ${status}, not scheduled`;
      throw new AppException(ErrorCode.Conflict, `Message ${messageId} ${reason}: it can no longer be cancelled`, { status });
    });
    await this.queue.remove(messageId).catch(() => undefined);
    return this.status(accountId, messageId);
  }

  private async content(
    accountId: string,
    dto: SendEmailDto,
    unsubscribeUrl: string | undefined,
  ): Promise<{ subject: string; text?: string; html?: string }> {
    if (dto.template) {
      const variables = { ...(dto.data ?? {}), ...(dto.variables ?? {}), ...(unsubscribeUrl ? { unsubscribeUrl } : {}) };
      const rendered = await this.templates.render(accountId, dto.template, variables);
      const subject = dto.subject ?? rendered.subject;
      if (/[\r\n\0]/.test(subject)) throw AppException.invalidField('subject', 'the rendered subject may not contain CR, LF or NUL');
      return { subject, text: dto.text ?? rendered.text, html: dto.html ?? rendered.html };
    }
    const fields: { field: string; message: string }[] = [];
    if (dto.subject === undefined || dto.subject.trim() === '')
      fields.push({ field: 'subject', message: 'subject is required unless a template gives it' });
    if (dto.text === undefined && dto.html === undefined)
      fields.push({ field: 'text', message: 'text or html (or a template) is required' });
    if (fields.length) throw AppException.validation(fields);
    if (/[\r\n\0]/.test(dto.subject!)) throw AppException.invalidField('subject', 'may not contain CR, LF or NUL');
    return { subject: dto.subject!, text: dto.text, html: dto.html };
  }

  /** The addresses (once each, compared case-insensitively) split by the account's suppression list. */
  private async unsuppressed(accountId: string, addresses: string[]): Promise<{ recipients: string[]; suppressed: string[] }> {
    const envelope = [...new Map(addresses.map((address) => [address.toLowerCase(), address])).values()];
    const suppressedSet = await this.suppression.suppressedAmong(accountId, envelope);
    return {
      recipients: envelope.filter((address) => !suppressedSet.has(address.toLowerCase())),
      suppressed: envelope.filter((address) => suppressedSet.has(address.toLowerCase())),
    };
  }

  private async verifiedDomain(accountId: string, name: string): Promise<Domain | null> {
    const cacheKey = `${accountId}/${name}`;
    const cached = this.domainCache.get(cacheKey);
    if (cached) return cached;
    const domain = await this.domains.findVerified(accountId, name);
    // Only hits are kept: a domain verified a moment ago must work at once.
    if (domain) this.domainCache.set(cacheKey, domain);
    return domain;
  }
}

type ImmediateMessageFields = Pick<
  Message,
  'fromAddress' | 'fromDomain' | 'subject' | 'recipients' | 'suppressedRecipients' | 'headerMessageId' | 'content'
> &
  Partial<Pick<Message, 'systemSender' | 'envelopeFrom' | 'inboundMessageId'>>;

/** A message Mailroom makes itself (form mail, forwarding): queued now, untracked, of no list or template. */
function immediateMessage(accountId: string, id: string, fields: ImmediateMessageFields): Message {
  return Object.assign(new Message(), {
    id,
    accountId,
    status: 'queued',
    pendingRecipients: fields.recipients,
    priority: 'normal',
    scheduledFor: null,
    tracking: null,
    listId: null,
    templateName: null,
    metadata: null,
    ...fields,
  } satisfies Partial<Message>);
}

export function acceptanceEvents(suppressed: string[], at: Date): NewEvent[] {
  return [
    { type: 'queued', occurredAt: at },
    ...suppressed.map((recipient): NewEvent => ({ type: 'suppressed', recipient, detail: 'on the suppression list', occurredAt: at })),
  ];
}

/** D-18: past → now (null), more than 30 days ahead → 400. */
export function scheduleTime(scheduleFor: string | undefined): Date | null {
  if (!scheduleFor) return null;
  const at = new Date(scheduleFor);
  const ahead = at.getTime() - Date.now();
  if (ahead > MAX_SCHEDULE_AHEAD_MS) throw AppException.invalidField('scheduleFor', 'may be at most 30 days ahead');
  return ahead > 0 ? at : null;
}
