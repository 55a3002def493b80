import type { KeyObject } from 'node:crypto';
import type { RecipientAnswer } from '../smtp-outcome';

/** A domain's DKIM key, parsed once: parsing the PEM costs more than the signature itself. */
export interface DkimKey {
  domainName: string;
  keySelector: string;
  privateKey: KeyObject;
  /** The header fields to sign, colon-separated (DKIM_SIGNED_HEADERS). */
  headerFieldNames: string;
}

/**
 * nodemailer's default list plus List-Unsubscribe-Post: RFC 8058 one-click counts only when the signature
 * covers both List-Unsubscribe headers (Gmail and Yahoo check it).
 */
export const DKIM_SIGNED_HEADERS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:Content-ID:' +
  'Content-Description:Resent-Date:Resent-From:Resent-Sender:Resent-To:Resent-Cc:Resent-Message-ID:In-Reply-To:References:' +
  'List-Id:List-Help:List-Unsubscribe:List-Unsubscribe-Post:List-Subscribe:List-Post:List-Owner:List-Archive:OTP-Token';

/** One attempt: the message's MIME source, DKIM-signed, to the recipients that have no final answer yet. */
export interface OutgoingEmail {
  messageId: string;
  from: string;
  recipients: string[];
  raw: Buffer;
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
