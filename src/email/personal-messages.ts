import { Injectable } from '@nestjs/common';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { hostMatchesDomain } from '../common/domain-match';
import { newId } from '../common/ids';
import { mergeUserKeyed, type UserKeyed } from '../common/records';
import { DomainsService } from '../domains/domains.service';
import { assertSendable } from '../templates/template-content';
import { TemplatesService } from '../templates/templates.service';
import { TrackingTokens } from '../tracking/tracking-tokens';
import type { MessageWithEvents } from '../outbox/acceptance.repository';
import type { NewEvent } from '../outbox/message-event.entity';
import { acceptanceEvents, type Mailbox } from '../outbox/outbox.service';
import { scheduleTime } from './schedule-time';
import { checkBodySize, checkCustomHeaders, parseMailbox } from './message-content';
import { Message, MessagePriority, MessageTracking } from '../outbox/message.entity';

/** What a list or batch send gives besides its recipients. */
export interface PersonalSendInput {
  from: string;
  template?: string;
  subject?: string;
  html?: string;
  text?: string;
  variables?: Record<string, unknown>;
  headers?: Record<string, string>;
  tracking?: MessageTracking;
  metadata?: Record<string, string>;
  scheduleFor?: string;
  priority?: MessagePriority;
}

/**
 * A list or batch send, checked and resolved once, from which each recipient's message is made. Plain JSON: a
 * list send stores it, so its subscribers get the template as it was when the send was accepted.
 */
export interface PreparedSend {
  from: Mailbox;
  fromDomain: string;
  replyTo: Mailbox[];
  headers: Record<string, string>;
  /** Handlebars sources: the template's parts, replaced by the subject, html or text the send gave. */
  content: { subject: string; html?: string; text?: string };
  templateName: string | null;
  variables: Record<string, unknown>;
  tracking: MessageTracking | null;
  metadata: Record<string, string> | null;
  priority: MessagePriority;
  /** ISO 8601; null: now. */
  scheduledFor: string | null;
  listId: string | null;
}

/**
 * Sends that make one message per recipient (D-15): list sends and batch sends. Their checks are those of a
 * send (D-14, D-18, D-19); each message is rendered for its recipient, with an unsubscribe link of its own.
 */
@Injectable()
export class PersonalMessages {
  constructor(
    private readonly domains: DomainsService,
    private readonly templates: TemplatesService,
    private readonly tokens: TrackingTokens,
  ) {}

  /** Checks the parts every recipient shares: 400 for a bad field or template, 404 for an unknown template, 403 for the `from` domain. */
  async prepare(
    accountId: string,
    input: PersonalSendInput,
    options: { allowedFromDomains?: readonly string[]; listId?: string } = {},
  ): Promise<PreparedSend> {
    const from = parseMailbox(input.from);
    if (!from) throw AppException.invalidField('from', 'must be an email address, optionally with a name: Name <address>');
    const fromDomain = from.address.slice(from.address.lastIndexOf('@') + 1).toLowerCase();
    if (options.allowedFromDomains?.length && !hostMatchesDomain(fromDomain, options.allowedFromDomains)) {
      throw new AppException(ErrorCode.DomainNotAllowed, `This key may not send from ${fromDomain}`);
    }
    const { replyTo, custom } = checkCustomHeaders(input.headers);
    const content = await this.content(accountId, input);
    const variables = input.variables ?? {};
    // Compiles the content now: a syntax error is a 400 before anything is accepted.
    this.templates.renderContent(content, variables);
    const scheduledFor = scheduleTime(input.scheduleFor);
    if (!(await this.domains.findVerified(accountId, fromDomain))) {
      throw new AppException(ErrorCode.DomainNotVerified, `${fromDomain} is not a verified domain of this account`, { domain: fromDomain });
    }
    return {
      from,
      fromDomain,
      replyTo,
      headers: custom,
      content,
      templateName: input.template ?? null,
      variables,
      tracking: storedTracking(input.tracking, options.listId !== undefined),
      metadata: input.metadata ?? null,
      priority: input.priority ?? 'normal',
      scheduledFor: scheduledFor?.toISOString() ?? null,
      listId: options.listId ?? null,
    };
  }

  /**
   * The message to one recipient, rendered with `variables` and its own `unsubscribeUrl` (so the id is made
   * first). Suppression is the caller's: it drops suppressed recipients before.
   */
  message(
    accountId: string,
    send: PreparedSend,
    to: { email: string; name?: string | null },
    variables: Record<string, unknown>,
    id = newId('msg'),
  ): MessageWithEvents {
    const rendered = this.templates.renderContent(
      send.content,
      mergeUserKeyed<unknown>(variables, { unsubscribeUrl: this.tokens.unsubscribeUrl(id) }),
    );
    checkBodySize({ ...rendered, headers: send.headers });
    const acceptedAt = new Date();
    const scheduledFor = send.scheduledFor && new Date(send.scheduledFor) > acceptedAt ? new Date(send.scheduledFor) : null;
    const message = Object.assign(new Message(), {
      id,
      accountId,
      status: scheduledFor ? 'scheduled' : 'queued',
      fromAddress: send.from.address,
      fromDomain: send.fromDomain,
      subject: rendered.subject,
      recipients: [to.email],
      pendingRecipients: [to.email],
      suppressedRecipients: [],
      headerMessageId: `<${id.slice(4)}@${send.fromDomain}>`,
      content: {
        from: send.from,
        to: [{ name: to.name ?? '', address: to.email }],
        cc: [],
        replyTo: send.replyTo,
        subject: rendered.subject,
        ...(rendered.text !== undefined ? { text: rendered.text } : {}),
        ...(rendered.html !== undefined ? { html: rendered.html } : {}),
        headers: send.headers,
        attachments: [],
        date: acceptedAt.toISOString(),
      },
      priority: send.priority,
      scheduledFor,
      tracking: send.tracking,
      listId: send.listId,
      templateName: send.templateName,
      metadata: send.metadata,
    } satisfies Partial<Message>);
    const events: NewEvent[] = [
      ...acceptanceEvents([], acceptedAt),
      ...(scheduledFor ? [{ type: 'scheduled', detail: scheduledFor.toISOString(), occurredAt: acceptedAt } satisfies NewEvent] : []),
    ];
    return { message, events };
  }

  /** A stored template's parts with the send's own replacing them, or the send's inline content (subject and html or text). */
  private async content(accountId: string, input: PersonalSendInput): Promise<PreparedSend['content']> {
    if (input.template) {
      const template = await this.templates.get(accountId, input.template);
      assertSendable(template);
      return {
        subject: input.subject ?? template.subject,
        ...optional('html', input.html ?? template.html),
        ...optional('text', input.text ?? template.text),
      };
    }
    const fields: { field: string; message: string }[] = [];
    if (input.subject === undefined || input.subject.trim() === '')
      fields.push({ field: 'subject', message: 'subject is required unless a template gives it' });
    if (input.html === undefined && input.text === undefined)
      fields.push({ field: 'text', message: 'text or html (or a template) is required' });
    if (fields.length) throw AppException.validation(fields);
    return { subject: input.subject!, ...optional('html', input.html), ...optional('text', input.text) };
  }
}

/**
 * The variables one recipient's message is rendered with, each layer winning over the ones before: the send's shared
 * `variables`, then the recipient's `email` and `name` (a name given nowhere is ''), then the recipient's own
 * variables. So `{name: "Ann"}` in a recipient's variables is not overwritten by a name the recipient was not given.
 */
export function recipientVariables(
  shared: Readonly<Record<string, unknown>> | null | undefined,
  to: { email: string; name?: string | null },
  own?: Readonly<Record<string, unknown>> | null,
): UserKeyed<unknown> {
  const given = to.name === undefined || to.name === null ? { email: to.email } : { email: to.email, name: to.name };
  return mergeUserKeyed<unknown>({ name: '' }, shared, given, own);
}

/**
 * The tracking a list or batch send's messages store (issue 35): a batch send's carry unsubscribe links unless it said
 * `unsubscribe: false`; a list send's always do (by their listId), its flags are kept as given.
 */
function storedTracking(tracking: MessageTracking | undefined, list: boolean): MessageTracking | null {
  if (list) return tracking ? { ...tracking } : null;
  return { ...tracking, unsubscribe: tracking?.unsubscribe ?? true };
}

function optional<K extends string>(key: K, value: string | null | undefined): Partial<Record<K, string>> {
  return value === undefined || value === null ? {} : ({ [key]: value } as Record<K, string>);
}
