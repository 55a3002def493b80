/**
 * The cap on what a form email renders: a post of a few MB of `"` or `<` would otherwise make a mail of over
 * 100 MB, since HTML escaping multiplies it. Attachments are not counted here: the uploads' own limits bound them.
 */
export const MAX_FORM_EMAIL_BODY_BYTES = 5 * 1024 * 1024;

/** What the default layout takes beside the values (headings, about 300 bytes of table markup per field, footer). */
const LAYOUT_BYTES = 256 * 1024;

/** The share of the cap the fields of one email (their names, then values) may take, in the units of `renderedCost`. */
export const VALUES_BUDGET = MAX_FORM_EMAIL_BODY_BYTES - LAYOUT_BYTES;

/** Bytes an ASCII character takes in the text part, and in the text and html parts together. */
const ASCII_TEXT = new Uint8Array(128).fill(1);
const ASCII_BOTH = new Uint8Array(128).fill(2);
// A line break starts an indented line in the text (2 more) and is a `<br>` in html; html escapes these five.
for (const [char, html] of [
  ['\n', 4],
  ['\r', 4],
  ['&', 5],
  ['<', 4],
  ['>', 4],
  ['"', 6],
  ["'", 5],
] as const) {
  const code = char.charCodeAt(0);
  const text = char === '\n' || char === '\r' ? 3 : 1;
  ASCII_TEXT[code] = text;
  ASCII_BOTH[code] = text + html;
}

/**
 * Bytes the characters of `value` take in the rendered email, stopping once they would exceed `room`: UTF-8 in
 * the text part, and with an html part also as escaped there (`"` → `&quot;`). Returns the cost and where it stopped
 * (never inside a surrogate pair).
 */
function measure(value: string, withHtml: boolean, room = Infinity): { cost: number; end: number } {
  const ascii = withHtml ? ASCII_BOTH : ASCII_TEXT;
  const factor = withHtml ? 2 : 1;
  let cost = 0;
  let i = 0;
  while (i < value.length) {
    const code = value.charCodeAt(i);
    let bytes: number;
    let length = 1;
    if (code < 0x80) bytes = ascii[code];
    else if (code < 0x800) bytes = 2 * factor;
    else if (code >= 0xd800 && code < 0xdc00 && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes = 4 * factor;
      length = 2;
    } else bytes = 3 * factor;
    if (cost + bytes > room) break;
    cost += bytes;
    i += length;
  }
  return { cost, end: i };
}

export function renderedCost(value: string, withHtml: boolean): number {
  return measure(value, withHtml).cost;
}

/**
 * The values, the longest cut so that all of them together cost at most `budget`: each cut value keeps the same
 * share (so short values stay whole) and ends with `pointer(characters cut)`. Values within the budget are unchanged.
 */
export function cutToBudget(values: string[], budget: number, withHtml: boolean, pointer: (more: number) => string): string[] {
  const costs = values.map((value) => renderedCost(value, withHtml));
  if (costs.reduce((sum, cost) => sum + cost, 0) <= budget) return values;
  const share = fairShare(costs, budget);
  return values.map((value, i) => {
    if (costs[i] <= share) return value;
    // The pointer's cost, with its count at most 7 digits (values are at most 100,000 characters long).
    const room = share - renderedCost(pointer(9_999_999), withHtml);
    const kept = prefixWithin(value, room, withHtml);
    return kept + pointer(value.length - kept.length);
  });
}

/** The largest share such that every cost, capped at it, sums to at most `budget` (water-filling). */
function fairShare(costs: number[], budget: number): number {
  const sorted = [...costs].sort((a, b) => a - b);
  let left = budget;
  for (let i = 0; i < sorted.length; i++) {
    const even = Math.floor(left / (sorted.length - i));
    if (sorted[i] > even) return even;
    left -= sorted[i];
  }
  return budget;
}

/** The longest start of `value` costing at most `room`, never half of a surrogate pair. */
function prefixWithin(value: string, room: number, withHtml: boolean): string {
  return value.slice(0, measure(value, withHtml, Math.max(room, 0)).end);
}

/** The UTF-8 bytes of a rendered email's body parts. */
export function bodyBytes(body: { text: string; html?: string }): number {
  return Buffer.byteLength(body.text, 'utf8') + (body.html === undefined ? 0 : Buffer.byteLength(body.html, 'utf8'));
}
