import type { KeyObject } from 'node:crypto';

/** A domain's DKIM key, parsed once: parsing the PEM costs more than the signature itself. */
export interface DkimKey {
  domainName: string;
  keySelector: string;
  privateKey: KeyObject;
}

/** One attempt: the message's MIME source to the recipients that have no final answer yet. */
export interface OutgoingEmail {
  messageId: string;
  from: string;
  recipients: string[];
  raw: Buffer;
  dkim: DkimKey | null;
}

export interface RecipientRejection {
  recipient: string;
  responseCode?: number;
  response: string;
}

export interface TransportResult {
  accepted: string[];
  rejected: RecipientRejection[];
  response: string;
}

/**
 * Hands an email to the provider. Resolves with per-recipient results when the server took the message
 * for at least one recipient; rejects with the SMTP error (responseCode, response) when it took none.
 */
export interface MailTransport {
  readonly name: string;
  send(email: OutgoingEmail): Promise<TransportResult>;
  close(): Promise<void>;
}

export const MAIL_TRANSPORT = Symbol('MAIL_TRANSPORT');
