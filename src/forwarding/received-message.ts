/**
 * Loops (D-31): a message that has passed this many relays is refused (Postfix's hopcount_limit; RFC 5321
 * 6.3 asks for a limit of at least 100 only when counting is the sole protection, and ours is not).
 */
export const MAX_HOPS = 50;

/** Carries a token (LoopTokens) of each address a message was forwarded for; a message that comes back for one of them is a loop. */
export const LOOP_HEADER = 'X-Mailroom-Loop';

/** A header field of the received message: its name as written and its unfolded value. */
export interface HeaderField {
  name: string;
  value: string;
}

/** The header section of a message: everything before the first empty line (the whole message when there is none). */
export function headerSection(source: Buffer): string {
  let end = source.indexOf('\r\n\r\n');
  if (end === -1) end = source.indexOf('\n\n');
  // Headers are ASCII (RFC 5322) or UTF-8 (RFC 6532): latin1 keeps every byte one character, enough to read names.
  return source.subarray(0, end === -1 ? source.length : end).toString('latin1');
}

/** The fields of a header section, unfolded; lines that are not fields (a leading mbox "From " line) are skipped. */
export function headerFields(section: string): HeaderField[] {
  const fields: HeaderField[] = [];
  for (const line of section.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && fields.length) {
      fields[fields.length - 1].value += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0 || /\s/.test(line.slice(0, colon))) continue;
    fields.push({ name: line.slice(0, colon), value: line.slice(colon + 1).trim() });
  }
  return fields;
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
  const from = `from ${clean(input.helo) || 'unknown'} (${clean(input.clientHostname ?? '') || 'unknown'} [${input.clientAddress}])`;
  const forPart = input.recipients.length === 1 ? `\r\n\tfor <${input.recipients[0]}>` : '';
  const received =
    `Received: ${from}\r\n\tby ${input.hostname} (Mailroom) with ${input.secure ? 'ESMTPS' : 'ESMTP'} id ${input.id}${forPart};` +
    `\r\n\t${rfc5322Date(input.receivedAt)}\r\n`;
  return received + input.loopTokens.map((token) => `${LOOP_HEADER}: ${token}\r\n`).join('');
}

/** What the client said, kept to the characters that cannot break a header. */
function clean(value: string): string {
  return value.replace(/[^\x21-\x7e]/g, '').slice(0, 200);
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `Mon, 23 Nov 2026 09:05:07 +0000` (RFC 5322 3.3), in UTC. */
export function rfc5322Date(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${DAYS[date.getUTCDay()]}, ${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()} ` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`
  );
}
