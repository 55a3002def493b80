import { rfc5322Date } from '../received-message';
import type { MessageContent } from '../../outbox/message.entity';

/** The parts of a delivery status notification past its text, kept in its message's content until it is sent. */
export interface DsnReport {
  /** The message/delivery-status part (RFC 3464), CRLF lines. */
  deliveryStatus: string;
  /** The header section of the message it is about (text/rfc822-headers), CRLF lines; null when no longer kept. */
  originalHeaders: string | null;
  /** The Message-ID of that message, for In-Reply-To and References. */
  originalMessageId: string | null;
}

/** One recipient the notification reports as failed. */
export interface FailedRecipient {
  /** The address as the sender wrote it (an address of the forwarding domain). */
  recipient: string;
  status: string;
  /** Diagnostic-Code with its type: `smtp; 550 5.1.1 …`. */
  diagnostic: string;
  lastAttemptAt: Date;
}

export interface DsnInput {
  /** The name of the reporting MTA (INBOUND_SMTP_HOSTNAME). */
  reportingMta: string;
  /** Where it goes: the envelope sender of the message it is about. */
  sender: string;
  arrivedAt: Date;
  failed: readonly FailedRecipient[];
  originalHeaders: string | null;
  originalMessageId: string | null;
  originalSubject: string;
  /** Its Date. */
  date: Date;
}

export const DSN_SUBJECT = 'Undelivered Mail Returned to Sender';
export const DSN_FROM_NAME = 'Mail Delivery System';

/** The content of the notification's message: the human-readable text and the report parts (composeDsn makes the MIME). */
export function dsnContent(input: DsnInput): MessageContent & { report: DsnReport } {
  const from = { name: DSN_FROM_NAME, address: `MAILER-DAEMON@${input.reportingMta}` };
  return {
    from,
    to: [{ name: '', address: input.sender }],
    cc: [],
    replyTo: [],
    subject: DSN_SUBJECT,
    text: humanText(input),
    headers: {},
    attachments: [],
    date: input.date.toISOString(),
    report: {
      deliveryStatus: deliveryStatus(input),
      originalHeaders: input.originalHeaders,
      originalMessageId: input.originalMessageId,
    },
  };
}

/**
 * The notification as sent (RFC 3462 multipart/report): its text, the delivery-status part, the headers of the
 * message it is about. Deterministic, as every composed message: the boundary comes from the message id.
 */
export function composeDsn(messageId: string, headerMessageId: string, content: MessageContent & { report: DsnReport }): Buffer {
  const boundary = `=_mailroom_report_${messageId.replace(/^msg_/, '')}`;
  const { report } = content;
  const head = [
    `From: ${content.from.name} <${content.from.address}>`,
    `To: <${content.to[0].address}>`,
    `Subject: ${content.subject}`,
    `Date: ${rfc5322Date(new Date(content.date))}`,
    `Message-ID: ${headerMessageId}`,
    ...(report.originalMessageId ? [`In-Reply-To: ${report.originalMessageId}`, `References: ${report.originalMessageId}`] : []),
    // RFC 3834: replies made by machines; receivers and their auto-responders answer none.
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status;\r\n\tboundary="${boundary}"`,
  ];
  const parts = [
    part('text/plain; charset=utf-8', 'Notification', Buffer.from(content.text ?? '', 'utf8')),
    part('message/delivery-status', 'Delivery report', Buffer.from(report.deliveryStatus, 'utf8')),
    // Kept byte for byte as received (read as latin1, one character a byte).
    ...(report.originalHeaders
      ? [part('text/rfc822-headers', 'Undelivered message headers', Buffer.from(report.originalHeaders, 'latin1'))]
      : []),
  ];
  return Buffer.concat([
    Buffer.from(`${head.join('\r\n')}\r\n\r\nThis is a MIME-encapsulated message.\r\n`, 'utf8'),
    // Each part ends with CRLF: the delimiter's own CRLF follows it (RFC 2046 5.1.1).
    ...parts.flatMap((p) => [Buffer.from(`\r\n--${boundary}\r\n`), p]),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
}

/** Whether a stored message's content is a delivery status notification. */
export function isDsnContent(content: MessageContent): content is MessageContent & { report: DsnReport } {
  return Boolean((content as { report?: DsnReport }).report);
}

function part(contentType: string, description: string, body: Buffer): Buffer {
  const text = body.subarray(-2).toString() === '\r\n' ? body : Buffer.concat([body, Buffer.from('\r\n')]);
  const encoding = text.some((byte) => byte > 0x7f) ? '8bit' : '7bit';
  const head = `Content-Description: ${description}\r\nContent-Type: ${contentType}\r\nContent-Transfer-Encoding: ${encoding}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), text]);
}

/** RFC 3464 section 2: the per-message fields, then one group per recipient. */
function deliveryStatus(input: DsnInput): string {
  const perMessage = [`Reporting-MTA: dns; ${input.reportingMta}`, `Arrival-Date: ${rfc5322Date(input.arrivedAt)}`];
  const perRecipient = input.failed.map((f) =>
    [
      `Final-Recipient: rfc822; ${f.recipient}`,
      'Action: failed',
      `Status: ${f.status}`,
      `Diagnostic-Code: ${f.diagnostic}`,
      `Last-Attempt-Date: ${rfc5322Date(f.lastAttemptAt)}`,
    ].join('\r\n'),
  );
  return `${[perMessage.join('\r\n'), ...perRecipient].join('\r\n\r\n')}\r\n`;
}

function humanText(input: DsnInput): string {
  const lines = [
    `This is the mail system at ${input.reportingMta}.`,
    '',
    `Your message was accepted on ${rfc5322Date(input.arrivedAt)}, but it could not be forwarded`,
    'to every destination of the address(es) below, and no further attempts will be made:',
    '',
    ...input.failed.map((f) => `<${f.recipient}>: ${reasonOf(f)}`),
    '',
    ...(input.originalSubject ? [`Subject of your message: ${input.originalSubject.replace(/[\r\n]+/g, ' ')}`] : []),
    ...(input.originalHeaders ? ['The headers of your message are attached.'] : []),
  ];
  return `${lines.join('\r\n')}\r\n`;
}

/** The Diagnostic-Code without its type, a next hop's answer said to be one. */
function reasonOf(f: FailedRecipient): string {
  const text = f.diagnostic.replace(/^[\w.-]+;\s*/, '');
  if (!/^smtp;/i.test(f.diagnostic)) return text;
  return `${f.status.startsWith('5') ? 'refused' : 'not accepted in time'}: ${text}`;
}
