import type { SMTPPoolSentMessageInfo } from 'nodemailer';
import { classifyTransactionError, type SmtpErrorLike } from '../smtp-outcome';
import { type MailTransport, type OutgoingEmail, ProviderFailure, type TransportResult } from './mail-transport';
import { SmtpPool } from './nodemailer';

/** The provider over SMTP (D-20): nodemailer's connection pool, sending each message's signed bytes as they are. */
export class SmtpTransport implements MailTransport {
  readonly name = 'smtp';
  private readonly pool: SmtpPool;
  /** Messages handed to the pool and not answered yet: each holds a connection, or waits for one past poolSize. */
  private sending = 0;

  constructor(
    url: string,
    private readonly poolSize: number,
  ) {
    const parsed = new URL(url);
    this.pool = new SmtpPool({
      host: parsed.hostname,
      port: parsed.port ? Number(parsed.port) : parsed.protocol === 'smtps:' ? 465 : 587,
      secure: parsed.protocol === 'smtps:',
      ...(parsed.username ? { auth: { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } } : {}),
      maxConnections: poolSize,
      maxMessages: Infinity,
    });
  }

  async send(email: OutgoingEmail): Promise<TransportResult> {
    let info: SMTPPoolSentMessageInfo;
    this.sending++;
    try {
      info = await this.pool.send(email);
    } catch (err) {
      const failure = classifyTransactionError(err as SmtpErrorLike);
      if (failure?.kind === 'recipients') return { accepted: [], rejected: failure.answers, response: '' };
      if (failure?.kind === 'provider') throw new ProviderFailure(failure.description, failure.responseCode);
      throw err;
    } finally {
      this.sending--;
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

  /** The pool as /metrics shows it (nodemailer tells no more of its connections than its options). */
  connections(): { inUse: number; waiting: number; max: number } {
    return { inUse: Math.min(this.sending, this.poolSize), waiting: Math.max(0, this.sending - this.poolSize), max: this.poolSize };
  }

  close(): Promise<void> {
    this.pool.close();
    return Promise.resolve();
  }
}
