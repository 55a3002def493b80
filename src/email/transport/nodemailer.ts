import type { Readable, Transform } from 'node:stream';
import type { MailComposerOptions, MailMessage, SMTPPoolOptions, SMTPPoolSentMessageInfo } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import RelaxedBody from 'nodemailer/lib/dkim/relaxed-body';
import dkimSign from 'nodemailer/lib/dkim/sign';
import MailComposer from 'nodemailer/lib/mail-composer';
import { foldLines as nodemailerFoldLines } from 'nodemailer/lib/mime-funcs';
import { normalizeDomain } from 'nodemailer/lib/shared';
import SMTPPool from 'nodemailer/lib/smtp-pool';
import type { OutgoingEmail } from './mail-transport';

/**
 * The only file that reaches into nodemailer's lib/ files, most of which nodemailer does not document as public
 * API (its DKIM pieces, its header folding, its pool driven without `sendMail`). package.json pins nodemailer to
 * exactly this version, and `nodemailer.spec.ts` holds each piece to the output it gives here: upgrading means
 * changing both and seeing that spec pass.
 */
export const NODEMAILER_VERSION = '10.6.0';

/** The mailboxes of an address field (`Ada <ada@example.org>, bob@example.org`), groups flattened. */
export function parseAddressField(input: string): { name: string; address: string }[] {
  return addressparser(input, { flatten: true });
}

/** A message's MIME source, composed by nodemailer's MailComposer (what `sendMail` would send). */
export function composeMessage(options: MailComposerOptions): Readable {
  return new MailComposer(options).compile().createReadStream();
}

/**
 * A stream that takes a message body and emits `hash` with the base64 SHA-256 of its relaxed canonical form
 * (RFC 6376 3.4.4), as nodemailer's `dkim` option computes it. It passes the bytes on: resume it when only
 * the hash is wanted.
 */
export function relaxedBodyHasher(): Transform {
  return new RelaxedBody({ hashAlgo: 'sha256' });
}

/**
 * The relaxed canonical form (RFC 6376 3.4.2) of the header fields named in `fieldNames` (colon-separated),
 * each CRLF-terminated, and the names that were found, in signing order.
 */
export function relaxedHeaders(fields: { key: string; line: string }[], fieldNames: string): { headers: string; fieldNames: string } {
  return dkimSign.relaxedHeaders(fields, fieldNames);
}

/** A header line folded at `lineLength` columns, as nodemailer folds the DKIM-Signature field. */
export function foldLines(line: string, lineLength: number): string {
  return nodemailerFoldLines(line, lineLength);
}

/** A domain name in its ASCII (punycode) form, as nodemailer writes the `d=` tag. */
export function asciiDomain(domain: string): string {
  return normalizeDomain(domain, false);
}

/**
 * nodemailer's SMTP connection pool, handed messages whose bytes are final. It resolves with the pool's answer
 * (accepted and rejected recipients) and rejects with nodemailer's error (`code`, `command`, `responseCode`,
 * `rejectedErrors`), which `classifyTransactionError` reads.
 */
export class SmtpPool {
  private readonly pool: SMTPPool;

  constructor(options: SMTPPoolOptions) {
    this.pool = new SMTPPool(options);
  }

  send(email: OutgoingEmail): Promise<SMTPPoolSentMessageInfo> {
    return new Promise((resolve, reject) =>
      this.pool.send(finishedMessage(email), (err, sent) =>
        err || !sent ? reject(err ?? new Error('the pool answered nothing')) : resolve(sent),
      ),
    );
  }

  close(): void {
    this.pool.close();
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
