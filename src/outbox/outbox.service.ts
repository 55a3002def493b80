import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../common/ids';
import { QuotaService } from '../quotas/quota.service';
import { SuppressionService } from '../suppression/suppression.service';
import { Acceptance, AcceptanceRepository, MessageWithEvents, meteringOf } from './acceptance.repository';
import { type AttachmentInput, prepareAttachments } from './attachments/attachment-content';
import { AttachmentStore } from './attachments/attachment-store';
import { EmailQueue } from './email.queue';
import type { NewEvent } from './message-event.entity';
import { Message } from './message.entity';

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
  /** Copies (a form's allowed `_cc`): recipients like `to`, shown in the Cc header. */
  cc?: string[];
  replyTo?: Mailbox[];
  subject: string;
  text: string;
  /** Absent for a text-only email (a form's `_format=plain` notification). */
  html?: string;
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

/**
 * The one way in for every email, whoever makes it (sends, batches, list sends, forms, forwarding, notices): it
 * meters, stores attachment bytes, commits messages with their events in the group commit (D-16), then queues their
 * delivery. Messages come with the account's suppression list applied: by `compose`, `forwarded` or `unsuppressed`
 * here, or by a bulk sender's own one-query check.
 */
@Injectable()
export class OutboxService {
  constructor(
    private readonly acceptances: AcceptanceRepository,
    private readonly queue: EmailQueue,
    private readonly suppression: SuppressionService,
    private readonly quotas: QuotaService,
    private readonly attachmentStore: AttachmentStore,
  ) {}

  /**
   * The message of an email Mailroom composed, recipients on the account's suppression list dropped; null
   * when none remain. Nothing is written: `accept` does that, with whatever else the request commits.
   */
  async compose(accountId: string, email: ComposedEmail): Promise<MessageWithEvents | null> {
    const { recipients, suppressed } = await this.unsuppressed(accountId, [...email.to, ...(email.cc ?? [])]);
    if (recipients.length === 0) return null;
    const toSet = new Set(email.to.map((address) => address.toLowerCase()));
    const addressed = recipients.filter((address) => toSet.has(address.toLowerCase()));
    const copies = recipients.filter((address) => !toSet.has(address.toLowerCase()));
    // Every To suppressed: the copies are the addressees (a message with an empty To header is refused or looks forged).
    const [to, cc] = addressed.length ? [addressed, copies] : [copies, []];

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
        to: to.map((address) => ({ name: '', address })),
        cc: cc.map((address) => ({ name: '', address })),
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
      await this.attachmentStore.save([...(acceptance.attachments ?? []), ...acceptance.messages.flatMap((m) => m.attachments ?? [])]);
      await this.acceptances.insert(acceptance);
    } catch (err) {
      await reservation?.release();
      throw err;
    }
    reservation?.committed();
    for (const { message } of acceptance.messages) this.queueDelivery(message);
  }

  /**
   * Accepts in the caller's transaction, with what it reads and locks there (a delivery status notification, a
   * notice claimed with its webhook). Metering is the caller's; it calls `queueDelivery` once the transaction commits.
   */
  acceptWithin(manager: EntityManager, acceptance: Acceptance): Promise<void> {
    return this.acceptances.insertWithin(manager, acceptance);
  }

  /** Queues the delivery of a committed message; never waits for Redis (the sweeper re-adds a job that is lost). */
  queueDelivery(message: Pick<Message, 'id' | 'priority' | 'scheduledFor'>): void {
    void this.queue.enqueue({ messageId: message.id, priority: message.priority, notBefore: message.scheduledFor });
  }

  /** The addresses (once each, compared case-insensitively) split by the account's suppression list. */
  async unsuppressed(accountId: string, addresses: string[]): Promise<{ recipients: string[]; suppressed: string[] }> {
    const envelope = [...new Map(addresses.map((address) => [address.toLowerCase(), address])).values()];
    const suppressedSet = await this.suppression.suppressedAmong(accountId, envelope);
    return {
      recipients: envelope.filter((address) => !suppressedSet.has(address.toLowerCase())),
      suppressed: envelope.filter((address) => suppressedSet.has(address.toLowerCase())),
    };
  }
}

type ImmediateMessageFields = Pick<
  Message,
  'fromAddress' | 'fromDomain' | 'subject' | 'recipients' | 'suppressedRecipients' | 'headerMessageId' | 'content'
> &
  Partial<Pick<Message, 'systemSender' | 'envelopeFrom' | 'inboundMessageId'>>;

/** A message Mailroom makes itself (form mail, forwarding, DSNs): queued now, untracked, of no list or template. */
export function immediateMessage(accountId: string, id: string, fields: ImmediateMessageFields): Message {
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

/** The events an accepted message starts with: queued, and one per recipient dropped as suppressed. */
export function acceptanceEvents(suppressed: string[], at: Date): NewEvent[] {
  return [
    { type: 'queued', occurredAt: at },
    ...suppressed.map((recipient): NewEvent => ({ type: 'suppressed', recipient, detail: 'on the suppression list', occurredAt: at })),
  ];
}
