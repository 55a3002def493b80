/** How an SMTP answer ends an attempt for a recipient (D-20). */
export type SmtpVerdict = 'accepted' | 'temporary' | 'permanent';

export interface SmtpErrorLike {
  code?: string;
  responseCode?: number;
  response?: string;
  message?: string;
  /** The SMTP command that got the answer (nodemailer: 'AUTH PLAIN', 'MAIL FROM', 'RCPT TO', 'DATA', 'CONN' …). */
  command?: string;
  /** The recipient a RCPT TO answer was about. */
  recipient?: string;
  /** nodemailer: the RCPT TO answers when every recipient was refused. */
  rejectedErrors?: SmtpErrorLike[];
}

const ENHANCED_STATUS = /\b([245])\.\d{1,3}\.\d{1,3}\b/;

/**
 * Classifies a recipient's answer: the reply code first, else the enhanced status code (RFC 3463) in the
 * text; no answer at all is temporary, so it is retried.
 */
export function classifySmtpError(error: SmtpErrorLike): SmtpVerdict {
  const code = error.responseCode;
  if (typeof code === 'number' && code >= 200 && code < 600) {
    if (code >= 500) return 'permanent';
    if (code >= 400) return 'temporary';
  }
  const enhanced = ENHANCED_STATUS.exec(error.response ?? '');
  if (enhanced?.[1] === '5') return 'permanent';
  return 'temporary';
}

/** A one-line description of an SMTP failure for the message's events. */
export function describeSmtpError(error: SmtpErrorLike): string {
  const text = (error.response ?? error.message ?? 'unknown error').replace(/\s+/g, ' ').trim();
  return error.response || !error.code ? text.slice(0, 500) : `${error.code}: ${text}`.slice(0, 500);
}

export interface RecipientAnswer {
  recipient: string;
  responseCode?: number;
  response: string;
}

/**
 * Who a failed SMTP transaction is about. `recipients`: the server refused every recipient at RCPT TO, each
 * with its own answer (only such answers may bounce a recipient). `provider`: the transaction failed as a
 * whole (AUTH, MAIL FROM, DATA, TLS, the connection): nothing is known about the recipients. `null`: not an
 * SMTP failure at all (a bug, a stream error).
 */
export type TransactionFailure =
  { kind: 'recipients'; answers: RecipientAnswer[] } | { kind: 'provider'; responseCode?: number; description: string } | null;

/** nodemailer's codes for the provider (or the way to it) failing, and the socket errors it passes on. */
const PROVIDER_ERROR_CODES = new Set([
  'ECONNECTION',
  'ETIMEDOUT',
  'ESOCKET',
  'EDNS',
  'ETLS',
  'EREQUIRETLS',
  'EPROTOCOL',
  'EENVELOPE',
  'EMESSAGE',
  'EAUTH',
  'ENOAUTH',
  'EOAUTH2',
  'EPROXY',
  'EMAXLIMIT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/** Commands whose name says nothing useful to the reader of an event. */
const SILENT_COMMANDS = new Set(['CONN', 'API']);

export function classifyTransactionError(error: SmtpErrorLike): TransactionFailure {
  const refused = error.rejectedErrors ?? [];
  if (error.command === 'RCPT TO' && refused.length > 0 && refused.every((e) => e.recipient)) {
    return {
      kind: 'recipients',
      answers: refused.map((e) => ({ recipient: e.recipient!, responseCode: e.responseCode, response: describeSmtpError(e) })),
    };
  }
  if (typeof error.responseCode === 'number' || (error.code !== undefined && PROVIDER_ERROR_CODES.has(error.code))) {
    const description = describeSmtpError(error);
    const command = error.command && !SILENT_COMMANDS.has(error.command) ? `${error.command}: ` : '';
    return { kind: 'provider', responseCode: error.responseCode, description: `${command}${description}`.slice(0, 500) };
  }
  return null;
}
