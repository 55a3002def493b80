import { rfc5322Date } from '../../common/rfc5322-date';
import type { DsnReport } from '../../email/dsn-mime';
import type { MessageContent } from '../../outbox/message.entity';

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
