import { headerBounds } from '../received-message';
import { exchange, ScannerFailure } from './scanner-socket';

const LF = 0x0a;

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

/**
 * What spamd reads of a message longer than `maxBytes`: its header section, then the start and the end of its body,
 * half of what is left each, cut at line ends (SpamAssassin scores such a body as any other). A header section longer
 * than half of `maxBytes` keeps its first and last fields the same way. Padding the start of a message does not push
 * its last parts out of what spamd reads, nor padding its end the first; padding both ends can hide its middle. Within
 * one text part SpamAssassin applies its body rules to about the first 50 KB only (its body_part_scan_size): one part
 * padded at its start hides its end from those rules whatever spamd is given.
 */
export function spamdExcerpt(message: Buffer, maxBytes: number): Buffer {
  if (message.length <= maxBytes) return message;
  const { end, bodyStart } = headerBounds(message);
  const fields = ends(message.subarray(0, end), Math.floor(maxBytes / 2), true);
  const blank = message.subarray(end, bodyStart);
  const body = ends(message.subarray(bodyStart), maxBytes - fields.length - blank.length, false);
  return Buffer.concat([fields, blank, body]);
}

/**
 * `bytes` when they fit in `budget`, else their first and last lines that fit in half of it each; with `fields`,
 * the last part starts at a field (a line that is not a continuation).
 */
function ends(bytes: Buffer, budget: number, fields: boolean): Buffer {
  if (bytes.length <= budget) return bytes;
  const half = Math.floor(budget / 2);
  const headEnd = bytes.lastIndexOf(LF, half - 1) + 1 || half;
  let tailStart = bytes.length - half;
  for (let next = bytes.indexOf(LF, tailStart - 1); next !== -1 && next + 1 < bytes.length; next = bytes.indexOf(LF, next + 1)) {
    if (!fields || (bytes[next + 1] !== 0x20 && bytes[next + 1] !== 0x09)) {
      tailStart = next + 1;
      break;
    }
  }
  return Buffer.concat([bytes.subarray(0, headEnd), bytes.subarray(tailStart)]);
}
