import { rfc5322Date } from '../common/rfc5322-date';
import type { MessageContent } from '../outbox/message.entity';

/** The parts of a delivery status notification past its text, kept in its message's content until it is sent. */
export interface DsnReport {
  /** The message/delivery-status part (RFC 3464), CRLF lines. */
  deliveryStatus: string;
  /** The header section of the message it is about (text/rfc822-headers), CRLF lines; null when no longer kept. */
  originalHeaders: string | null;
  /** The Message-ID of that message, for In-Reply-To and References. */
  originalMessageId: string | null;
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
