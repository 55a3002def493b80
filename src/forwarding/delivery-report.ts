import { type Attachment, simpleParser, type SimpleParserOptions } from 'mailparser';
import { suppressesRecipient } from '../email/smtp-outcome';
import { headerFields } from './received-message';

export type ReportedOutcome = 'bounced' | 'deferred' | 'delivered' | 'complained';

export interface ReportedRecipient {
  outcome: ReportedOutcome;
  /** Final-Recipient (or Original-Recipient) address, bare, as written; ARF: Original-Rcpt-To; may be null. */
  recipient: string | null;
  /** Status code as given (5.1.1), or null (ARF). */
  status: string | null;
  /** A short human reason: Diagnostic-Code without its type prefix, else Status + Action; ARF: Feedback-Type. */
  reason: string;
  /** Whether it puts the recipient on the suppression list: a complaint does, a bounce only if about the address (suppressesRecipient). */
  suppresses: boolean;
  /**
   * A `delivered` that only passed the message on (Action relayed: to a system that sends no reports; expanded: to a
   * list's members), not into the recipient's mailbox: it does not show the address works.
   */
  relayed?: true;
}

export interface DeliveryReport {
  /** Message-ID of the original message if the report includes its headers (text/rfc822-headers or message/rfc822), with <>. */
  originalMessageId: string | null;
  recipients: ReportedRecipient[];
}

type Fields = Map<string, string[]>;

const PARSER_OPTIONS: SimpleParserOptions & { ignoreEmbedded: boolean } = {
  // A delivery-status part as an attachment (by default mailparser pastes it into the text).
  keepDeliveryStatus: true,
  // Passed on to mailparser's MIME splitter: the returned message stays one part instead of being spliced into ours.
  ignoreEmbedded: true,
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
};
/** RFC 3464, and RFC 6533's UTF-8 variant. */
const STATUS_PARTS = ['message/delivery-status', 'message/global-delivery-status'];
/** RFC 5965. */
const FEEDBACK_PART = 'message/feedback-report';
/** What a report may carry of the original message (RFC 6522, RFC 6532, RFC 6533). */
const ORIGINAL_PARTS = ['text/rfc822-headers', 'message/rfc822', 'message/global', 'message/global-headers'];
const STATUS_CODE = /^([245]\.\d{1,3}\.\d{1,3})(?!\S)/;
const MAX_REASON_LENGTH = 1000;

/** null when the message is not a delivery-status or feedback report. Never throws on bad input (returns null). */
export async function parseDeliveryReport(source: Buffer): Promise<DeliveryReport | null> {
  try {
    const mail = await simpleParser(source, PARSER_OPTIONS);
    const contentType = mail.headers.get('content-type') as { value?: string } | undefined;
    if (contentType?.value?.toLowerCase() !== 'multipart/report') return null;
    // The report's own parts only: a report inside a part (a returned message, say) is not about our message.
    const parts = mail.attachments.filter((part) => /^\d+$/.test(part.partId ?? ''));
    const statusPart = parts.find((part) => STATUS_PARTS.includes(part.contentType));
    const feedbackPart = parts.find((part) => part.contentType === FEEDBACK_PART);
    const recipients = statusPart ? statusRecipients(statusPart) : feedbackPart ? feedbackRecipients(feedbackPart) : null;
    if (!recipients) return null;
    const originalPart = parts.find((part) => ORIGINAL_PARTS.includes(part.contentType));
    return { originalMessageId: originalPart ? originalMessageId(originalPart) : null, recipients };
  } catch {
    return null;
  }
}

function statusRecipients(part: Attachment): ReportedRecipient[] {
  const recipients: ReportedRecipient[] = [];
  // The group about the message (Reporting-MTA, Arrival-Date) has neither Action nor Status: no outcome, skipped.
  for (const fields of fieldGroups(part.content.toString('utf8'))) {
    const action = first(fields, 'action')
      ?.toLowerCase()
      .split(/[\s(;]/)[0];
    const status = STATUS_CODE.exec(first(fields, 'status') ?? '')?.[1] ?? null;
    const outcome = statusOutcome(action, status);
    if (!outcome) continue;
    const diagnosed = diagnostic(first(fields, 'diagnostic-code'));
    recipients.push({
      outcome,
      recipient: bareAddress(first(fields, 'final-recipient') ?? first(fields, 'original-recipient')),
      status,
      reason: diagnosed ?? [status, action].filter(Boolean).join(' '),
      suppresses: outcome === 'bounced' && suppressesRecipient({ status, text: diagnosed ?? undefined }),
      ...(action === 'relayed' || action === 'expanded' ? { relayed: true as const } : {}),
    });
  }
  return recipients;
}

/** The Action decides; without a known one, the class of the Status code. */
function statusOutcome(action: string | undefined, status: string | null): ReportedOutcome | null {
  switch (action) {
    case 'failed':
      return 'bounced';
    case 'delayed':
      return 'deferred';
    case 'delivered':
    case 'relayed':
    case 'expanded':
      return 'delivered';
  }
  switch (status?.[0]) {
    case '5':
      return 'bounced';
    case '4':
      return 'deferred';
    case '2':
      return 'delivered';
  }
  return null;
}

function feedbackRecipients(part: Attachment): ReportedRecipient[] {
  const fields = parseFields(part.content.toString('utf8'));
  const reason = first(fields, 'feedback-type')?.toLowerCase() || 'complaint';
  const addresses = (fields.get('original-rcpt-to') ?? []).map(bareAddress).filter((address) => address !== null);
  const recipients = addresses.length ? addresses : [null];
  return recipients.map((recipient) => ({ outcome: 'complained', recipient, status: null, reason, suppresses: true }));
}

function originalMessageId(part: Attachment): string | null {
  const text = part.content.toString('utf8').replace(/\r\n?/g, '\n');
  const headerEnd = text.search(/\n[ \t]*\n/);
  const value = first(parseFields(headerEnd < 0 ? text : text.slice(0, headerEnd)), 'message-id');
  if (!value) return null;
  const bracketed = /<[^<>\s]+>/.exec(value);
  if (bracketed) return bracketed[0];
  return /^[^<>\s]+$/.test(value) ? `<${value}>` : null;
}

/** Field groups (RFC 3464 section 2.1): blank-line separated, each as header fields. */
function fieldGroups(text: string): Fields[] {
  return text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .map(parseFields)
    .filter((fields) => fields.size > 0);
}

/** The block's header fields (unfolded by headerFields) by lower-cased name, each with its values in order. */
function parseFields(block: string): Fields {
  const fields: Fields = new Map();
  for (const { name, value } of headerFields(block)) {
    const key = name.toLowerCase();
    fields.set(key, [...(fields.get(key) ?? []), value]);
  }
  return fields;
}

function first(fields: Fields, name: string): string | undefined {
  return fields.get(name)?.find((value) => value !== '');
}

/** `rfc822; <user@example.com>` → `user@example.com`. */
function bareAddress(value: string | undefined): string | null {
  if (!value) return null;
  const typed = /^[\w.-]+\s*;(.*)$/.exec(value);
  const address = (typed ? typed[1] : value)
    .trim()
    .replace(/^<(.*)>$/, '$1')
    .trim();
  return address || null;
}

/**
 * `smtp; 550-5.1.1 Account … 550-5.1.1 does not exist` → `550 5.1.1 Account … does not exist`: without the type and
 * the reply code the server repeated on each line of a multi-line reply.
 */
function diagnostic(value: string | undefined): string | null {
  if (!value) return null;
  let text = value
    .replace(/^[\w.-]+\s*;/, '')
    .replace(/\s+/g, ' ')
    .trim();
  const reply = /^(\d{3})[ -](?:([245]\.\d{1,3}\.\d{1,3}) )?/.exec(text);
  if (reply) {
    const [prefix, code, enhanced] = reply;
    const lineStart = `${code}[ -]${enhanced ? `${enhanced.replace(/\./g, '\\.')} ` : ''}`;
    text = `${code} ${enhanced ? `${enhanced} ` : ''}${text.slice(prefix.length).replace(new RegExp(` ${lineStart}`, 'g'), ' ')}`.trim();
  }
  if (!text) return null;
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH - 1)}…` : text;
}
