import type { IncomingMessage } from 'node:http';

/**
 * How deeply objects and arrays may nest in a request body, the top level counting as 1. Deeper bodies are
 * refused before JSON.parse builds them: 40 MB of `[` would otherwise take seconds and a gigabyte of heap, and
 * later recursive steps (validation, hashing, logging) overflow the stack long before that.
 */
export const MAX_BODY_DEPTH = 32;

/** qs counts bracket levels below the top-level object: `a[b]=1` is depth 1 and nests two levels deep. */
export const URLENCODED_PARSER_DEPTH = MAX_BODY_DEPTH - 1;

export const BODY_TOO_DEEP = `The request body nests objects or arrays more than ${MAX_BODY_DEPTH} levels deep`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether UTF-8 JSON text nests deeper than `max`, found in one pass over the bytes without parsing. The
 * structural characters are ASCII and never occur inside a multi-byte UTF-8 sequence; string contents are
 * skipped with indexOf, so a body that is mostly one long string (an attachment) costs almost nothing.
 * Malformed text is left for JSON.parse to refuse.
 */
export function jsonNestsDeeperThan(body: Buffer, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (byte === QUOTE) i = closingQuote(body, i);
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** The index of the quote that ends the string opened at `open` (a quote after an odd run of backslashes is escaped). */
function closingQuote(body: Buffer, open: number): number {
  let at = open;
  for (;;) {
    at = body.indexOf(QUOTE, at + 1);
    if (at === -1) return body.length;
    let backslashes = 0;
    while (body[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/** An error body-parser passes on with its status and type (it keeps both from the error `verify` throws). */
function parserError(status: number, type: string, message: string): Error {
  return Object.assign(new Error(message), { status, type, expose: true });
}

/**
 * body-parser's `verify` hook for JSON: runs on the raw (decompressed) bytes before they are parsed. JSON must be
 * UTF-8 (RFC 8259 §8.1), which is also what makes the byte scan above sound.
 */
export function verifyJsonBody(_request: IncomingMessage, _response: unknown, body: Buffer, charset: string): void {
  if (charset !== 'utf-8') {
    throw parserError(415, 'charset.unsupported', `JSON bodies must be UTF-8, not ${charset.toUpperCase()}`);
  }
  if (jsonNestsDeeperThan(body, MAX_BODY_DEPTH)) throw parserError(400, 'entity.too.deep', BODY_TOO_DEEP);
}
