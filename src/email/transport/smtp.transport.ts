import type MailMessage from 'nodemailer/lib/mailer/mail-message';
import SMTPPool, { type SMTPPoolOptions, type SMTPPoolSentMessageInfo } from 'nodemailer/lib/smtp-pool';
import { classifyTransactionError, type SmtpErrorLike } from '../smtp-outcome';
import { type MailTransport, type OutgoingEmail, ProviderFailure, type TransportResult } from './mail-transport';

/** The provider over SMTP (D-20): nodemailer's connection pool, sending each message's signed bytes as they are. */
export class SmtpTransport implements MailTransport {
  readonly name = 'smtp';
  private readonly pool: SMTPPool;
  /** Messages handed to the pool and not answered yet: each holds a connection, or waits for one past poolSize. */
  private sending = 0;

  constructor(
    url: string,
    private readonly poolSize: number,
  ) {
    const parsed = new URL(url);
    this.pool = new SMTPPool({
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
    this.sending++;
    try {
      info = await new Promise((resolve, reject) =>
        this.pool.send(finishedMessage(email), (err, sent) =>
          err || !sent ? reject(err ?? new Error('the pool answered nothing')) : resolve(sent),
        ),
      );
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

/**
 * The email as a nodemailer transport reads its `mail` (its envelope, an id for its log, and a stream of the
 * bytes, opened again if the pool sends it again), for bytes that are final. `sendMail` would compose them
 * again: a MailComposer, a MimeNode and its stream pipeline around bytes it does not change, 60% of the CPU of
 * handing a message to the pool. A stream that fails (an attachment that cannot be read) ends the transaction
 * before its final dot, and its error is the send's.
 */
function finishedMessage(email: OutgoingEmail): MailMessage<SMTPPoolSentMessageInfo> {
  const envelope = { from: email.from, to: email.recipients };
  const message = {
    getEnvelope: () => envelope,
    messageId: () => email.messageId,
    getHeader: () => email.messageId,
    createReadStream: email.source,
  };
  return { data: { envelope }, message } as unknown as MailMessage<SMTPPoolSentMessageInfo>;
}
