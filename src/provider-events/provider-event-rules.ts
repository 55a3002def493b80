import type { MessageStatus } from '../outbox/message.entity';
import { codeClasses, failureScope } from '../email/smtp-outcome';
import type { SuppressionReason } from '../suppression/suppression-entry.entity';

/** What the provider reports about a message it took from us (D-24), plus the opens and clicks it tracks itself. */
export const PROVIDER_EVENT_TYPES = ['delivered', 'bounced', 'complained', 'deferred', 'opened', 'clicked'] as const;
export type ProviderEventType = (typeof PROVIDER_EVENT_TYPES)[number];

/** At most this many events per call. */
export const MAX_PROVIDER_EVENTS = 1000;

/** How an event names its message: our `msg_…` id, or the RFC 5322 Message-ID we put on the email. */
export type MessageReference = { id: string } | { headerMessageId: string };

/** `msg_…` is our id; anything else is a Message-ID, given with or without its angle brackets. */
export function parseMessageReference(value: string): MessageReference {
  const trimmed = value.trim();
  if (/^msg_[A-Za-z0-9]+$/.test(trimmed)) return { id: trimmed };
  const bare = trimmed.replace(/^</, '').replace(/>$/, '');
  return { headerMessageId: `<${bare}>` };
}

/**
 * The body as a list of events: `{events: [...]}` as is; a bare array or a single event wrapped, so that
 * every entry is validated (and named in errors) as `events[i]`. Anything else (an empty object: no body) is
 * left to the validation.
 */
export function normalizeEventsBody(body: unknown): unknown {
  if (Array.isArray(body)) return { events: body };
  if (body !== null && typeof body === 'object' && Object.keys(body).length > 0 && !('events' in body)) return { events: [body] };
  return body;
}

/** A status change an event makes: from one of `from` to `to`, checked against the row when written. */
export interface StatusMove {
  from: readonly MessageStatus[];
  to: MessageStatus;
}

export interface EventEffect {
  move?: StatusMove;
  /** The move waits until every recipient of the message has had an event of this type. */
  everyRecipient?: true;
  /** The recipient goes on the account's suppression list (a bounce: only if bounceSuppresses says so). */
  suppress?: SuppressionReason;
  /** Whom the event is about must be known: a message with several recipients needs `recipient`. */
  needsRecipient: boolean;
}

/**
 * What each type does. A status only moves forward: `delivered` from `sent` (a message with several recipients
 * at the first one delivered: the events tell each); `bounced` from `sent` or `delivered` (a relay can bounce
 * after it accepted) once every recipient has bounced; a late `delivered` after `bounced` only adds its event.
 * `deferred` never moves the message: the provider retries on its own, while our `deferred` means our worker
 * will send again.
 */
export const EVENT_EFFECTS: Record<ProviderEventType, EventEffect> = {
  delivered: { move: { from: ['sent'], to: 'delivered' }, needsRecipient: false },
  bounced: { move: { from: ['sent', 'delivered'], to: 'bounced' }, everyRecipient: true, suppress: 'bounced', needsRecipient: true },
  complained: { suppress: 'complained', needsRecipient: true },
  deferred: { needsRecipient: false },
  opened: { needsRecipient: false },
  clicked: { needsRecipient: false },
};

/**
 * Whether a provider's bounce puts its recipient on the suppression list: by the codes in its reason when it has
 * any (only a failure of the address does, see suppressesRecipient); a bounce without any code does, as providers
 * report only hard bounces as `bounced`.
 */
export function bounceSuppresses(reason: string | undefined): boolean {
  return failureScope({ text: reason }) !== 'message';
}

/** What kind of bounce the provider reports: `hard` (permanent) unless it says soft/transient. */
export const BOUNCE_TYPES = ['hard', 'soft'] as const;
export type BounceType = (typeof BOUNCE_TYPES)[number];

/** An enhanced code as a word of its own; X.0.0 ("undefined") says nothing and is passed over, as failureScope does. */
const ENHANCED_CODE = /(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])/;
/** A 552 reply (RFC 5321: exceeded storage allocation) at the start of the reason, after an optional diagnostic type. */
const STORAGE_REPLY = /^\s*(?:[\w.-]+\s*;\s*)?552(?=[\s-]|$)/;

/**
 * Whether a permanent failure is about the state of the mailbox rather than the address (RFC 3463 X.2.x other than
 * X.2.1: full, over its size limit; without an enhanced code, a 552 reply): it may pass, so it does not suppress at
 * once, but it is counted as a soft bounce, so that a mailbox full for weeks ends on the suppression list. Read from
 * the first code that says something: a DSN's Status, then the reason (the order failureScope reads them in).
 */
export function mailboxStateFailure(report: { status?: string | null; reason?: string }): boolean {
  const code = [report.status ?? '', report.reason ?? '']
    .map((text) => ENHANCED_CODE.exec(text))
    .find((c) => c !== null && !(c[2] === '0' && c[3] === '0'));
  if (code) return code[1] === '5' && code[2] === '2' && code[3] !== '1';
  return STORAGE_REPLY.test(report.reason ?? '');
}

/**
 * A bounce is soft when the provider says so (`bounceType: soft`: SES `Transient`, Postmark `SoftBounce`), when its
 * reason carries only temporary codes (a 4.x.x DSN Status that failed at last, `452 4.2.2 mailbox full`), or when it
 * is about the mailbox's state (`552 5.2.2 mailbox full`, even reported as hard: mailboxStateFailure) and not known to
 * suppress (`suppresses`: what a bounce report's own Status says). Soft bounces never suppress at once: they are
 * counted (SoftBounces).
 */
export function bounceType(given: BounceType | undefined, reason: string | undefined, suppresses?: boolean): BounceType {
  if (given === 'soft' || (suppresses !== true && mailboxStateFailure({ reason }))) return 'soft';
  if (given) return given;
  // Only temporary codes (4.x.x, 4xx): a temporary failure the provider gave up on.
  const classes = codeClasses(reason ?? '');
  return classes.has('4') && !classes.has('5') ? 'soft' : 'hard';
}

/**
 * The bounce type of a recipient a delivery status notification reports as failed, by its Status: a 4.x.x (the
 * remote gave up after temporary failures) or a failure of the mailbox's state (mailboxStateFailure) is soft.
 */
export function reportedBounceType(status: string, reason: string): BounceType {
  return status.startsWith('4') || mailboxStateFailure({ status, reason }) ? 'soft' : 'hard';
}

/** A message a Message-ID names, with what tells candidates apart. */
export interface HeaderCandidate {
  id: string;
  recipients: readonly string[];
}

/**
 * The message a provider event names by Message-ID only (a fallback: forwarded mail keeps its original's
 * Message-ID, so one Message-ID may name several messages, of several accounts). The candidates are narrowed to
 * those sent to the event's recipient; exactly one must remain, else the event is about none of them: an
 * ambiguous id never touches a message it may not be about.
 */
export function pickByHeader<T extends HeaderCandidate>(
  candidates: readonly T[],
  recipient?: string,
): T | { ignored: string; ambiguous?: true } {
  const wanted = recipient?.trim().toLowerCase();
  const matching = wanted === undefined ? candidates : candidates.filter((c) => c.recipients.some((r) => r.toLowerCase() === wanted));
  if (matching.length === 1) return matching[0];
  if (matching.length === 0) return { ignored: 'no message with this Message-ID was sent to the recipient' };
  return {
    ignored: `the Message-ID names ${matching.length} messages (a forwarded copy keeps its original's): give our message id`,
    ambiguous: true,
  };
}

export type RecipientResolution = { recipient: string | null } | { ignored: string };

/**
 * Whom the event is about, as the message spells the address: the given recipient must be one of the message's
 * (compared case-insensitively); without one, a single-recipient message's only recipient, else the whole
 * message (null), which bounces and complaints cannot be about.
 */
export function resolveRecipient(type: ProviderEventType, recipients: readonly string[], given?: string): RecipientResolution {
  if (given !== undefined) {
    const wanted = given.trim().toLowerCase();
    const match = recipients.find((r) => r.toLowerCase() === wanted);
    return match ? { recipient: match } : { ignored: `${given} is not a recipient of the message` };
  }
  if (recipients.length === 1) return { recipient: recipients[0] };
  if (EVENT_EFFECTS[type].needsRecipient)
    return { ignored: `a ${type} event of a message with several recipients must name its recipient` };
  return { recipient: null };
}

/** The event's detail for the status page: the clicked URL, else the provider's reason. */
export function eventDetail(type: ProviderEventType, reason?: string, url?: string): string | null {
  if (type === 'clicked' && url !== undefined) return url;
  return reason ?? null;
}
