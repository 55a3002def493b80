import { exchange, ScannerFailure } from './scanner-socket';

/** What spamd made of a message. */
export interface SpamVerdict {
  score: number;
  /** spamd's own required_score; Mailroom compares the score with the domain's threshold instead. */
  requiredScore: number;
  /** The names of the rules that hit (`GTUBE`, `MISSING_DATE`), for the log. */
  rules: string[];
}

/**
 * Asks spamd for the score of `message` with the SYMBOLS command of the SPAMC/1.5 protocol
 * (https://github.com/apache/spamassassin/blob/trunk/spamd/PROTOCOL): one connection per message, closed by
 * spamd once it has answered.
 */
export async function checkSpam(address: string, message: Buffer, timeoutMs: number): Promise<SpamVerdict> {
  const request = Buffer.from(`SYMBOLS SPAMC/1.5\r\nContent-length: ${message.length}\r\n\r\n`, 'latin1');
  return parseSpamdReply(await exchange('spamd', address, [request, message], timeoutMs));
}

/**
 * `SPAMD/1.1 0 EX_OK`, a `Spam: True ; 1003.3 / 5.0` header and the rules' names after the blank line;
 * anything else (a non-zero code, no Spam header) is a ScannerFailure.
 */
export function parseSpamdReply(reply: Buffer): SpamVerdict {
  const text = reply.toString('latin1');
  const split = text.indexOf('\r\n\r\n');
  const [status = '', ...headers] = (split === -1 ? text : text.slice(0, split)).split('\r\n');
  const code = /^SPAMD\/\d+\.\d+ (\d+) (.*)$/.exec(status);
  if (!code) throw new ScannerFailure(`spamd: not a SPAMD reply: ${JSON.stringify(status.slice(0, 100))}`);
  if (code[1] !== '0') throw new ScannerFailure(`spamd: ${code[1]} ${code[2]}`);
  const spam = headers.map((h) => /^Spam:\s*\w+\s*;\s*(-?[\d.]+)\s*\/\s*(-?[\d.]+)\s*$/i.exec(h)).find((m) => m !== null);
  if (!spam) throw new ScannerFailure('spamd: the reply has no Spam header');
  const body = split === -1 ? '' : text.slice(split + 4).trim();
  return {
    score: Number(spam[1]),
    requiredScore: Number(spam[2]),
    rules: body ? body.split(',').map((rule) => rule.trim()) : [],
  };
}
