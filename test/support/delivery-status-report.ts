/** What a delivery status notification (RFC 3464) the tests send back to a return path says. */
export interface DeliveryStatusReportInput {
  /** The return path the report is addressed to. */
  to: string;
  /** The recipient it is about (Final-Recipient). */
  recipient: string;
  /** Action: failed unless given (delayed, delivered, relayed, expanded). */
  action?: string;
  /** The enhanced status code (Status). */
  status: string;
  /** The Diagnostic-Code's SMTP answer; its lines are folded. */
  diagnostic?: string | string[];
  /** Header lines of the original message, as a text/rfc822-headers part. */
  originalHeaders?: string[];
  /** The reporting MTA's domain: `mailer-daemon@` it sends the report. */
  reportingDomain?: string;
}

/** A multipart/report of one recipient, as the receiving system of a returned message would write it. */
export function deliveryStatusReport(input: DeliveryStatusReportInput): Buffer {
  const domain = input.reportingDomain ?? 'origin.test';
  const diagnostic = typeof input.diagnostic === 'string' ? [input.diagnostic] : input.diagnostic;
  const original = input.originalHeaders ? ['--b1', 'Content-Type: text/rfc822-headers', '', ...input.originalHeaders, ''] : [];
  return Buffer.from(
    [
      `From: Mail Delivery Subsystem <mailer-daemon@${domain}>`,
      `To: ${input.to}`,
      'Subject: Delivery Status Notification (Failure)',
      `Message-ID: <dsn-${Date.now()}-${Math.random().toString(36).slice(2)}@${domain}>`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      "Your message wasn't delivered.",
      '',
      '--b1',
      'Content-Type: message/delivery-status',
      '',
      `Reporting-MTA: dns; ${domain}`,
      '',
      `Final-Recipient: rfc822; ${input.recipient}`,
      `Action: ${input.action ?? 'failed'}`,
      `Status: ${input.status}`,
      ...(diagnostic ? [`Diagnostic-Code: smtp; ${diagnostic.join('\r\n ')}`] : []),
      '',
      ...original,
      '--b1--',
      '',
    ].join('\r\n'),
  );
}
