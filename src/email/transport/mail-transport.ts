import { Readable } from 'node:stream';
import type { RecipientAnswer } from '../smtp-outcome';

/**
 * A message's bytes, which can be read more than once: each call opens a new stream of the same bytes (a transport
 * that sends a message again, after its connection dropped, reads it again).
 */
export type MessageSource = () => Readable;

/** The source of bytes already in memory. */
export function bufferSource(bytes: Buffer): MessageSource {
  return () => Readable.from([bytes], { objectMode: false });
}

/** The source of `prefix`, then of `source`'s bytes as they are read (never held whole), then of `suffix`. */
export function framedSource(prefix: Buffer, source: MessageSource, suffix: Buffer = Buffer.alloc(0)): MessageSource {
  return () => Readable.from(framed(prefix, source, suffix), { objectMode: false });
}

async function* framed(prefix: Buffer, source: MessageSource, suffix: Buffer): AsyncGenerator<Buffer> {
  yield prefix;
  for await (const chunk of source()) yield chunk as Buffer;
  if (suffix.length) yield suffix;
}

/** One attempt: the message's MIME source, DKIM-signed, to the recipients that have no final answer yet. */
export interface OutgoingEmail {
  messageId: string;
  from: string;
  recipients: string[];
  source: MessageSource;
}

export interface TransportResult {
  accepted: string[];
  /** Recipients the server refused, each with its own answer (RCPT TO). */
  rejected: RecipientAnswer[];
  response: string;
}

/**
 * The provider failed the transaction as a whole (AUTH, MAIL FROM, DATA, TLS, the connection): it said nothing
 * about the recipients, so none of them may be bounced for it.
 */
export class ProviderFailure extends Error {
  constructor(
    /** The provider's answer, for the message's events. */
    readonly description: string,
    readonly responseCode?: number,
  ) {
    super(description);
    this.name = 'ProviderFailure';
  }
}

/**
 * Hands an email to the provider. Resolves with per-recipient results when the provider answered for the
 * recipients (took it for some, or refused every one at RCPT TO); rejects with a ProviderFailure when the
 * transaction failed as a whole, and with anything else for an error that is not the provider's.
 */
export interface MailTransport {
  readonly name: string;
  send(email: OutgoingEmail): Promise<TransportResult>;
  close(): Promise<void>;
}

export const MAIL_TRANSPORT = Symbol('MAIL_TRANSPORT');
