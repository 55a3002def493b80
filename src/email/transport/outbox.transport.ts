import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { framedSource, type MailTransport, type OutgoingEmail, type TransportResult } from './mail-transport';

/**
 * Used when SMTP_URL is unset (D-20): writes each email, DKIM-signed as it would have gone out, to
 * `<OUTBOX_DIR>/<messageId>.eml`, with the envelope in X-Outbox-* lines ahead of it, and reports every
 * recipient accepted.
 */
export class OutboxTransport implements MailTransport {
  readonly name = 'outbox';
  constructor(private readonly directory: string) {}

  async send(email: OutgoingEmail): Promise<TransportResult> {
    const envelope = `X-Outbox-Mail-From: <${email.from}>\r\n${email.recipients.map((r) => `X-Outbox-Rcpt-To: <${r}>\r\n`).join('')}`;
    await mkdir(this.directory, { recursive: true });
    await writeFile(join(this.directory, `${email.messageId}.eml`), framedSource(Buffer.from(envelope), email.source)());
    return { accepted: [...email.recipients], rejected: [], response: `250 written to ${this.directory}` };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
