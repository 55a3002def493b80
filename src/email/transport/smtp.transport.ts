import nodemailer, { type Mail } from 'nodemailer';
import type { SMTPPoolOptions, SMTPPoolSentMessageInfo } from 'nodemailer/lib/smtp-pool';
import { classifyTransactionError, type SmtpErrorLike } from '../smtp-outcome';
import { type MailTransport, type OutgoingEmail, ProviderFailure, type TransportResult } from './mail-transport';

/** The provider over SMTP (D-20): nodemailer's pooled transport, sending each message's signed bytes as they are. */
export class SmtpTransport implements MailTransport {
  readonly name = 'smtp';
  private readonly transporter: Mail<SMTPPoolSentMessageInfo, SMTPPoolOptions>;

  constructor(url: string, poolSize: number) {
    const parsed = new URL(url);
    this.transporter = nodemailer.createTransport({
      pool: true,
      host: parsed.hostname,
      port: parsed.port ? Number(parsed.port) : parsed.protocol === 'smtps:' ? 465 : 587,
      secure: parsed.protocol === 'smtps:',
      ...(parsed.username ? { auth: { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } } : {}),
      maxConnections: poolSize,
      maxMessages: Infinity,
    } satisfies SMTPPoolOptions);
  }

  async send(email: OutgoingEmail): Promise<TransportResult> {
    let info: SMTPPoolSentMessageInfo;
    try {
      info = await this.transporter.sendMail({ envelope: { from: email.from, to: email.recipients }, raw: email.raw });
    } catch (err) {
      const failure = classifyTransactionError(err as SmtpErrorLike);
      if (failure?.kind === 'recipients') return { accepted: [], rejected: failure.answers, response: '' };
      if (failure?.kind === 'provider') throw new ProviderFailure(failure.description, failure.responseCode);
      throw err;
    }
    const rejectedErrors = (info.rejectedErrors ?? []) as {
      recipient?: string;
      responseCode?: number;
      response?: string;
      message: string;
    }[];
    return {
      accepted: (info.accepted ?? []).map(String),
      rejected: (info.rejected ?? []).map((recipient: unknown, i: number) => {
        const error = rejectedErrors.find((e) => e.recipient === String(recipient)) ?? rejectedErrors[i];
        return {
          recipient: String(recipient),
          responseCode: error?.responseCode,
          response: error?.response ?? error?.message ?? 'rejected',
        };
      }),
      response: info.response ?? '',
    };
  }

  close(): Promise<void> {
    this.transporter.close();
    return Promise.resolve();
  }
}
