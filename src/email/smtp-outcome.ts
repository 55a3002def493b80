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

/** A permanent failure as reported: its reply code and enhanced status code when known, and its text, read for both. */
export interface FailureReport {
  replyCode?: number;
  /** An enhanced status code (RFC 3463) given apart from the text: a DSN's Status field. */
  status?: string | null;
  text?: string;
}

/**
 * What a permanent failure is about: the address itself (`mailbox`: it does not exist, its domain does not, or it is
 * disabled); anything else (`message`: policy, content, size, a full mailbox, relaying, our configuration, the
 * remote system); or nothing says (`unknown`: no code at all).
 */
export type FailureScope = 'mailbox' | 'message' | 'unknown';

/** RFC 3463 subject.detail codes about the address: bad mailbox, bad system, bad syntax, null MX (RFC 7505), disabled. */
const MAILBOX_DETAILS = new Set(['1.1', '1.2', '1.3', '1.10', '2.1']);
/**
 * Microsoft 365 answers an address it does not know with `550 5.4.1 Recipient address rejected: Access denied`
 * (directory-based edge blocking): a routing code by RFC 3463, a missing mailbox by its words.
 */
const UNKNOWN_RECIPIENT_4_1 = /recipient address rejected/i;
/** Legacy replies that mean "no such user" when nothing more precise is given (RFC 5321 4.2.3). */
const MAILBOX_REPLIES = new Set([550, 551, 553]);
/**
 * Words of a refusal without an enhanced code that is the relay refusing us, not the address failing: Exim's `550 relay
 * not permitted`, `550 Authentication required`. Read with the addresses taken out (a mailbox may be named relay@…).
 */
const RELAY_REFUSAL = /\brelay|authenticat/i;
/** An enhanced code as a word of its own (not a piece of an IP address or a version number). */
const ENHANCED_CODE = /(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])/;
/** A reply code at the start of the text, after an optional diagnostic type (`smtp; 550 …`). */
const REPLY_CODE = /^\s*(?:[\w.-]+\s*;\s*)?([245]\d\d)(?=[\s-]|$)/;

export function failureScope(report: FailureReport): FailureScope {
  // X.0.0 is "undefined": a DSN's Status 5.0.0 leaves the decision to the diagnostic's code, if any.
  const codes = [report.status ?? '', report.text ?? '']
    .map((text) => ENHANCED_CODE.exec(text))
    .filter((code) => code !== null && !(code[2] === '0' && code[3] === '0'));
  const enhanced = codes[0];
  if (enhanced) {
    const detail = `${enhanced[2]}.${enhanced[3]}`;
    const aboutAddress = MAILBOX_DETAILS.has(detail) || (detail === '4.1' && UNKNOWN_RECIPIENT_4_1.test(report.text ?? ''));
    return enhanced[1] === '5' && aboutAddress ? 'mailbox' : 'message';
  }
  const replyCode = report.replyCode ?? Number(REPLY_CODE.exec(report.text ?? '')?.[1] ?? NaN);
  if (Number.isNaN(replyCode)) return report.status ? 'message' : 'unknown';
  return MAILBOX_REPLIES.has(replyCode) && !RELAY_REFUSAL.test(withoutAddresses(report.text ?? '')) ? 'mailbox' : 'message';
}

/**
 * Whether a permanent failure puts the recipient on the suppression list: only when it is about the address
 * (RFC 3463 X.1.1, X.1.2, X.1.3, X.1.10, X.2.1; without an enhanced code, a 550, 551 or 553 reply). A refusal of the
 * content or by policy (5.7.x), a full mailbox (5.2.2) or a failure of the way there (5.3.x, 5.4.x, 5.5.x) fails the
 * recipient for this message only. A report without any code suppresses nothing.
 */
export function suppressesRecipient(report: FailureReport): boolean {
  return failureScope(report) === 'mailbox';
}

/** RFC 3463 subjects of a permanent refusal that is about the way, not the address: system, network, protocol, policy. */
const PROVIDER_SUBJECTS = new Set(['3', '4', '5', '7']);

/**
 * Whether a recipient's permanent answer to RCPT TO is the relay refusing us rather than the address failing: a
 * 5.7.x (relaying denied, authentication, sending paused), 5.3.x (system), 5.4.x (routing) or 5.5.x (protocol) that is
 * not about the mailbox (Microsoft's 5.4.1 "Recipient address rejected" is); without an enhanced code, a 5xx that says
 * relay or authentication (Exim's `550 relay not permitted`). At RCPT TO the answer comes from the provider (SMTP_URL),
 * so it says the provider will not take our mail: the message fails, nobody is suppressed.
 */
export function refusedByProvider(answer: { responseCode?: number; response: string }): boolean {
  if (classifySmtpError(answer) !== 'permanent' || suppressesRecipient({ replyCode: answer.responseCode, text: answer.response })) {
    return false;
  }
  const enhanced = ENHANCED_CODE.exec(answer.response);
  if (enhanced === null || enhanced[2] === '0') return RELAY_REFUSAL.test(withoutAddresses(answer.response));
  return enhanced[1] === '5' && PROVIDER_SUBJECTS.has(enhanced[2]);
}

/**
 * What shows the provider down after a transaction's RCPT TO answers, as one line for the log; null when they do not.
 * Only a transaction it refused as a whole does: no recipient accepted, every refusal the provider's (relaying denied).
 * One policy refusal among accepted recipients, or beside refusals about addresses, is logged with its message only:
 * marking every instance unready for it would flap under mixed traffic.
 */
export function providerRefusal(answers: { accepted: readonly string[]; rejected: readonly RecipientAnswer[] }): string | null {
  const { accepted, rejected } = answers;
  if (accepted.length > 0 || rejected.length === 0 || !rejected.every(refusedByProvider)) return null;
  const others = rejected.length > 1 ? ` (and ${rejected.length - 1} more recipients)` : '';
  return `RCPT TO ${rejected[0].recipient}: ${rejected[0].response}${others}`.slice(0, 500);
}

/**
 * A provider failure as the public /health/ready shows it: the command, reply code, enhanced code and text without
 * any address (`<…>`, `x@y`: no recipient, sender or VERP return path). The full line goes to the error log only.
 */
export function healthReason(description: string): string {
  return withoutAddresses(description).slice(0, 200);
}

function withoutAddresses(text: string): string {
  return text
    .replace(/<[^<>]*>|"[^"]*@[^"]*"|'[^']*@[^']*'/g, ' ')
    .replace(/[^\s<>()[\]"',;:]+@[^\s<>()[\]"',;:]+/g, ' ')
    .replace(/\(\s*\)|\[\s*\]/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/ (?=[:,;.)])/g, '')
    .trim();
}

/**
 * The classes (`2`, `4`, `5`) of the codes a failure's text carries: every enhanced status code in it (RFC 3463, as a
 * word of its own) and a reply code at its start (after an optional diagnostic type, `smtp; 452 …`).
 */
export function codeClasses(text: string): Set<string> {
  const classes = new Set([...text.matchAll(new RegExp(ENHANCED_CODE.source, 'g'))].map((code) => code[1]));
  const reply = REPLY_CODE.exec(text);
  if (reply) classes.add(reply[1][0]);
  return classes;
}
