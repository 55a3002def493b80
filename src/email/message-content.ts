import type { Readable } from 'node:stream';
import { isEmail } from 'class-validator';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { userKeyed } from '../common/records';
import { type AttachmentInput, byteLengthOf, isStored, type StoredAttachment } from '../outbox/attachments/attachment-content';
import type { MessageContent } from '../outbox/message.entity';
import { composeMessage, parseAddressField } from './transport/nodemailer';
import type { Mailbox } from '../outbox/outbox.service';

/** D-14 limits of one message. */
export const MAX_RECIPIENTS = 50;
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024;
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Headers the message composer owns: a custom header may not replace them. */
const STRUCTURAL_HEADER = /^(from|to|cc|bcc|subject|message-id|date|sender|return-path|mime-.*|content-.*|dkim-.*)$/i;
/** RFC 5322 field name: printable US-ASCII except the colon. */
const HEADER_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
const LINE_BREAK_OR_NUL = /[\r\n\0]/;

/**
 * Parses one address field entry (`ada@example.org` or `Ada <ada@example.org>`); null unless it is exactly
 * one mailbox with a valid address and no line break anywhere (a display name is a header too).
 */
export function parseMailbox(input: string): Mailbox | null {
  if (LINE_BREAK_OR_NUL.test(input)) return null;
  const parsed = parseAddressField(input);
  if (parsed.length !== 1) return null;
  const { name, address } = parsed[0];
  if (!address || !isEmail(address, { allow_display_name: false, allow_ip_domain: false })) return null;
  return { name: name ?? '', address };
}

/** The recipients of a field, or 400 INVALID_RECIPIENT naming the first bad one. */
export function parseRecipients(field: string, inputs: readonly string[] = []): Mailbox[] {
  return inputs.map((input, i) => {
    const mailbox = parseMailbox(input);
    if (!mailbox) {
      throw new AppException(ErrorCode.InvalidRecipient, `${field}[${i}] is not a valid email address: ${JSON.stringify(input)}`, {
        field: `${field}[${i}]`,
        value: input,
      });
    }
    return mailbox;
  });
}

/**
 * Checks custom headers: no CR/LF (header injection) in names or values, well-formed names, no structural
 * header. Reply-To is returned apart, parsed, because the composer encodes addresses itself.
 */
export function checkCustomHeaders(headers: Record<string, unknown> = {}): { replyTo: Mailbox[]; custom: Record<string, string> } {
  const fields: { field: string; message: string }[] = [];
  const custom: Record<string, string> = userKeyed();
  let replyTo: Mailbox[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const field = `headers.${name.replace(/[\r\n]/g, '\\n')}`;
    if (LINE_BREAK_OR_NUL.test(name) || (typeof value === 'string' && LINE_BREAK_OR_NUL.test(value))) {
      fields.push({ field, message: 'header names and values may not contain CR, LF or NUL' });
    } else if (typeof value !== 'string') {
      fields.push({ field, message: 'header values must be strings' });
    } else if (!HEADER_NAME.test(name)) {
      fields.push({ field, message: 'not a valid header name' });
    } else if (STRUCTURAL_HEADER.test(name)) {
      fields.push({ field, message: `${name} is set by Mailroom and cannot be given as a custom header` });
    } else if (name.toLowerCase() === 'reply-to') {
      const mailboxes = value.split(',').map((part) => parseMailbox(part.trim()));
      if (mailboxes.some((m) => m === null)) fields.push({ field, message: 'must be one or more email addresses' });
      else replyTo = mailboxes as Mailbox[];
    } else {
      custom[name] = value;
    }
  }
  if (fields.length) throw AppException.validation(fields);
  return { replyTo, custom };
}

/** Checks attachments: no line breaks in names or types, and at most 25 MB decoded in all (413). */
export function checkAttachments(attachments: readonly AttachmentInput[] = []): void {
  let total = 0;
  attachments.forEach((a, i) => {
    if (LINE_BREAK_OR_NUL.test(a.filename) || (a.contentType && LINE_BREAK_OR_NUL.test(a.contentType))) {
      throw AppException.invalidField(`attachments[${i}]`, 'filename and contentType may not contain CR, LF or NUL');
    }
    total += byteLengthOf(a.content);
  });
  if (total > MAX_ATTACHMENT_BYTES) {
    throw new AppException(ErrorCode.PayloadTooLarge, `Attachments add up to ${total} bytes; the limit is ${MAX_ATTACHMENT_BYTES}`, {
      limit: MAX_ATTACHMENT_BYTES,
    });
  }
}

/** The subject and bodies without attachments may not exceed 10 MB (413). */
export function checkBodySize(input: { subject: string; text?: string; html?: string; headers: Record<string, string> }): void {
  const headerBytes = Object.entries(input.headers).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  const bytes = Buffer.byteLength(input.subject) + Buffer.byteLength(input.text ?? '') + Buffer.byteLength(input.html ?? '') + headerBytes;
  if (bytes > MAX_BODY_BYTES) {
    throw new AppException(ErrorCode.PayloadTooLarge, `The message without attachments is ${bytes} bytes; the limit is ${MAX_BODY_BYTES}`, {
      limit: MAX_BODY_BYTES,
    });
  }
}

/** Opens the bytes of a stored attachment (AttachmentStore.open). */
export type AttachmentOpener = (attachment: StoredAttachment) => Readable;

const noStore: AttachmentOpener = (attachment) => {
  throw new Error(`no attachment store to read ${attachment.filename} from`);
};

/**
 * The MIME source of a stored message, as a stream: stored attachments are read as it is consumed, never held
 * whole. Deterministic: the Date, the Message-ID and the multipart boundaries come from the message, so every
 * reading (every attempt) gives the same bytes. Bcc never appears in it.
 */
export function composeMime(
  messageId: string,
  headerMessageId: string,
  content: MessageContent,
  openAttachment: AttachmentOpener = noStore,
): Readable {
  return composeMessage({
    from: content.from,
    to: content.to.length ? content.to : undefined,
    cc: content.cc.length ? content.cc : undefined,
    replyTo: content.replyTo.length ? content.replyTo : undefined,
    subject: content.subject,
    text: content.text,
    html: content.html,
    headers: content.headers,
    attachments: content.attachments.map((a) => ({
      filename: a.filename,
      // Messages accepted before attachments were stored apart hold them as base64.
      content: isStored(a) ? openAttachment(a) : Buffer.from(a.content, 'base64'),
      ...(a.contentType ? { contentType: a.contentType } : {}),
    })),
    messageId: headerMessageId,
    date: new Date(content.date),
    baseBoundary: messageId.replace(/^msg_/, ''),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
}
