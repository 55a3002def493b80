import { Injectable } from '@nestjs/common';
import { AppException } from '../common/errors/app.exception';
import { InvalidatedCache } from '../common/invalidated-cache';
import { ErrorCode } from '../common/errors/error-code';
import { hostMatchesDomain } from '../common/domain-match';
import { IdempotencyClaim, IdempotencyStore } from '../common/idempotency/idempotency.store';
import { newId } from '../common/ids';
import type { Domain } from '../domains/domain.entity';
import { DomainChanges } from '../domains/domain-changes';
import { DomainsService } from '../domains/domains.service';
import { TemplatesService } from '../templates/templates.service';
import { QuotaService } from '../quotas/quota.service';
import { creditStatement, EmailCredit } from '../quotas/usage-statement';
import { TrackingTokens } from '../tracking/tracking-tokens';
import { EmailQueue } from '../outbox/email.queue';
import type { NewEvent } from '../outbox/message-event.entity';
import { Message } from '../outbox/message.entity';
import { prepareAttachments } from '../outbox/attachments/attachment-content';
import { acceptanceEvents, OutboxService } from '../outbox/outbox.service';
import { MessageStatusDto } from './dto/message-status.dto';
import { SendEmailResponseDto } from './dto/send-email-response.dto';
import { SendEmailDto } from './dto/send-email.dto';
import { DeliveryStore } from './delivery.store';
import { MessagesRepository } from './messages.repository';
import { checkAttachments, checkBodySize, checkCustomHeaders, MAX_RECIPIENTS, parseMailbox, parseRecipients } from './message-content';
import { scheduleTime } from './schedule-time';

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

/** The send API (D-14 … D-19): checks and renders a send, then hands it to the outbox; a message's status, and cancelling it. */
@Injectable()
export class EmailService {
  private readonly domainCache = new InvalidatedCache<string, Domain | null>(DOMAIN_CACHE_MS);

  constructor(
    private readonly outbox: OutboxService,
    private readonly messages: MessagesRepository,
    private readonly store: DeliveryStore,
    private readonly queue: EmailQueue,
    private readonly domains: DomainsService,
    private readonly templates: TemplatesService,
    private readonly idempotency: IdempotencyStore,
    private readonly tokens: TrackingTokens,
    private readonly quotas: QuotaService,
    domainChanges: DomainChanges,
  ) {
    // A deleted domain sends no more, on any instance.
    domainChanges.invalidates(this.domainCache, (change) => (change.name ? `${change.accountId}/${change.name}` : null));
  }

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
    // The id comes first: the templates of a message that carries unsubscribe links get its link (for every recipient:
    // delivery gives each recipient's copy its own, recipient-copies.ts). Tracking opens or clicks offers none.
    const id = newId('msg');
    const content = await this.content(accountId, dto, dto.tracking?.unsubscribe ? this.tokens.unsubscribeUrl(id) : undefined);
    checkBodySize({ ...content, headers: custom });
    checkAttachments(dto.attachments);
    const scheduledFor = scheduleTime(dto.scheduleFor);

    if (!(await this.verifiedDomain(accountId, fromDomain))) {
      throw new AppException(ErrorCode.DomainNotVerified, `${fromDomain} is not a verified domain of this account`, { domain: fromDomain });
    }

    const { recipients, suppressed } = await this.outbox.unsuppressed(
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
      this.outbox.accept({
        messages: [{ message, events, attachments: attachments.uploads }],
        idempotency: idempotency && { claim: idempotency, statusCode: 200, body: answer },
      }),
    );
    if (idempotency) idempotency.recorded = true;
    return answer;
  }

  async status(accountId: string, messageId: string): Promise<MessageStatusDto> {
    const message = await this.messages.findForAccount(accountId, messageId);
    if (!message) throw AppException.notFound('Message', messageId);
    const events = await this.messages.events(messageId);
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
    const message = await this.messages.findForAccount(accountId, messageId);
    if (!message) throw AppException.notFound('Message', messageId);
    // Only a `scheduled` message can be cancelled: a worker takes one (`scheduled` → `queued`) right before
    // sending it, so a cancel and a send never both win. The margin keeps a cancel from racing a due job.
    const scheduledAfter = new Date(Date.now() + CANCEL_MARGIN_MS);
    const credit: EmailCredit = { accountId, emails: message.recipients.length, countedAt: message.createdAt };
    await this.quotas.credit(credit, async () => {
      const cancelled = await this.store.transition(
        messageId,
        ['scheduled'],
        { status: 'cancelled' },
        [{ type: 'cancelled' }],
        { scheduledAfter },
        (param) => creditStatement(credit, param),
      );
      if (cancelled) return;
      // Read again: a worker may have just taken it.
      const status = (await this.messages.findForAccount(accountId, messageId))?.status ?? message.status;
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

  private verifiedDomain(accountId: string, name: string): Promise<Domain | null> {
    // Only hits are kept: a domain verified a moment ago must work at once.
    return this.domainCache.load(
      `${accountId}/${name}`,
      () => this.domains.findVerified(accountId, name),
      (domain) => domain !== null,
    );
  }
}
