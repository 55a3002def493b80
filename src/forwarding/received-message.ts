import { rfc5322Date } from '../common/rfc5322-date';

/**
 * Loops (D-31): a message that has passed this many relays is refused (Postfix's hopcount_limit; RFC 5321
 * 6.3 asks for a limit of at least 100 only when counting is the sole protection, and ours is not).
 */
export const MAX_HOPS = 50;

/** Carries a token (LoopTokens) of each address a message was forwarded for; a message that comes back for one of them is a loop. */
export const LOOP_HEADER = 'X-Mailroom-Loop';

/** A header field of the received message: its name as written (surrounding white space removed) and its unfolded value. */
export interface HeaderField {
  name: string;
  value: string;
}

/** One header field as written: its name (as in HeaderField) and its raw text, continuation lines and line ends included. */
export interface RawField {
  name: string;
  raw: string;
}

/** Where a message's header section ends. */
export interface HeaderBounds {
  /** Where the empty line starts: `[0, end)` is the header section with the line end of its last field. */
  end: number;
  /** Where the body starts, past the empty line (the source's length when there is none). */
  bodyStart: number;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The bounds of the header section as mail readers find them (mailparser, mailauth): it ends at the first line that
 * is empty (LF or CRLF alone), whatever line ends the fields use; a message without one is all header. Every reading
 * of a received message's header goes through this, so that no check reads a different header than the reader.
 */
export function headerBounds(source: Buffer): HeaderBounds {
  let line = 0;
  while (line < source.length) {
    if (source[line] === LF) return { end: line, bodyStart: line + 1 };
    if (source[line] === CR && source[line + 1] === LF) return { end: line, bodyStart: line + 2 };
    const next = source.indexOf(LF, line);
    if (next === -1) break;
    line = next + 1;
  }
  return { end: source.length, bodyStart: source.length };
}

/** The header section of a message without the line end of its last field. */
export function headerSection(source: Buffer): string {
  // Headers are ASCII (RFC 5322) or UTF-8 (RFC 6532): latin1 keeps every byte one character, enough to read names.
  return source
    .subarray(0, headerBounds(source).end)
    .toString('latin1')
    .replace(/\r?\n$/, '');
}

/**
 * The fields of a header section as written, each with its continuation lines. A field's name is what comes before
 * the first colon of the field (its continuation lines included), white space around it removed, as mail readers take
 * it (`Content-Type : x` is a Content-Type field); '' for a line without a colon.
 */
export function rawFields(section: string): RawField[] {
  const fields: RawField[] = [];
  for (const line of section.match(/[^\n]*\n|[^\n]+$/g) ?? []) {
    if (/^[ \t]/.test(line) && fields.length) fields[fields.length - 1].raw += line;
    else fields.push({ name: '', raw: line });
  }
  for (const field of fields) {
    const colon = field.raw.indexOf(':');
    field.name = colon < 0 ? '' : field.raw.slice(0, colon).trim();
  }
  return fields;
}

/** The fields of a header section, unfolded; lines that are not fields (a leading mbox "From " line) are skipped. */
export function headerFields(section: string): HeaderField[] {
  return rawFields(section).flatMap((field, index) => {
    if (!field.name || (index === 0 && /^From\s/.test(field.raw) && /\s/.test(field.name))) return [];
    const value = field.raw.slice(field.raw.indexOf(':') + 1);
    return [
      {
        name: field.name,
        value: value
          .split(/\r?\n/)
          .map((part) => part.trim())
          .filter((part) => part !== '')
          .join(' '),
      },
    ];
  });
}

/**
 * Why the message must not be forwarded for these addresses, or null: it passed MAX_HOPS relays, or it carries
 * our loop header for one of them (it went out from here for that address and came back). `marksOf` gives the loop
 * field values, lower-cased, that stand for an address (LoopTokens.marksOf).
 */
export function loopOf(
  fields: readonly HeaderField[],
  forwardedFor: readonly string[],
  marksOf: (address: string) => readonly string[],
): string | null {
  const hops = fields.filter((f) => /^received$/i.test(f.name)).length;
  if (hops >= MAX_HOPS) return `${hops} Received headers: too many hops`;
  const seen = new Set(fields.filter((f) => f.name.toLowerCase() === LOOP_HEADER.toLowerCase()).map((f) => f.value.toLowerCase()));
  if (seen.size === 0) return null;
  const looped = forwardedFor.find((address) => marksOf(address).some((mark) => seen.has(mark)));
  return looped ? `already forwarded for ${looped}` : null;
}

export interface TraceInput {
  /** Our queue id of the message (inbound_messages.id). */
  id: string;
  clientAddress: string;
  /** The client's reverse DNS name, when known. */
  clientHostname?: string;
  helo: string;
  /** The name this server gives itself. */
  hostname: string;
  /** STARTTLS was used. */
  secure: boolean;
  /** The addresses on this domain the message was taken for. */
  recipients: readonly string[];
  /** The loop token of each of them (LoopTokens.tokenOf): never the addresses, which other destinations must not see. */
  loopTokens: readonly string[];
  receivedAt: Date;
}

/**
 * The fields added on top of a forwarded message: a Received field (RFC 5321 4.4; `for` only when the message
 * was for one address, so that other recipients stay private) and one loop field per address, carrying its token.
 * CRLF-terminated.
 */
export function traceFields(input: TraceInput): string {
  const from = `from ${printable(input.helo, 200, false) || 'unknown'} (${printable(input.clientHostname ?? '', 200, false) || 'unknown'} [${input.clientAddress}])`;
  const forPart = input.recipients.length === 1 ? `\r\n\tfor <${input.recipients[0]}>` : '';
  const received =
    `Received: ${from}\r\n\tby ${input.hostname} (Mailroom) with ${input.secure ? 'ESMTPS' : 'ESMTP'} id ${input.id}${forPart};` +
    `\r\n\t${rfc5322Date(input.receivedAt)}\r\n`;
  return received + input.loopTokens.map((token) => `${LOOP_HEADER}: ${token}\r\n`).join('');
}

/**
 * What a client or a scanner said, kept to printable ASCII, which cannot break a header field or an SMTP reply, and
 * cut to `maxLength`; `spaces: false` drops spaces too, for a single token such as a HELO name.
 */
export function printable(value: string, maxLength: number, spaces = true): string {
  return value.replace(spaces ? /[^\x20-\x7e]/g : /[^\x21-\x7e]/g, '').slice(0, maxLength);
}
