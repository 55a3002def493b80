/** How an SMTP answer ends an attempt for a recipient (D-20). */
export type SmtpVerdict = 'accepted' | 'temporary' | 'permanent';

export interface SmtpErrorLike {
  code?: string;
  responseCode?: number;
  response?: string;
  message?: string;
}

const ENHANCED_STATUS = /\b([245])\.\d{1,3}\.\d{1,3}\b/;

/**
 * Classifies a failed SMTP exchange: the reply code first, else the enhanced status code (RFC 3463) in the
 * text; no answer at all (connection refused, time-out, TLS) is temporary, so it is retried.
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
