import { escapeHtml } from '../../common/escape-html';

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  copy: '©',
  reg: '®',
  middot: '·',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  rsquo: '’',
  lsquo: '‘',
  rdquo: '”',
  ldquo: '“',
  euro: '€',
};

/** Elements whose content is not text a reader sees. */
const HIDDEN_BLOCKS: [open: string, close: string][] = [
  ['<script', '</script'],
  ['<style', '</style'],
  ['<head', '</head'],
  ['<title', '</title'],
  ['<!--', '-->'],
];

/** Tags that start or end a paragraph, and tags that end a line. */
const BLOCK_TAG = /^<\/?(p|div|table|h[1-6]|ul|ol|blockquote|pre|hr|section|article|header|footer)\b/i;
const LINE_TAG = /^<(br\b|\/tr\b|\/li\b)/i;

/** Plain text as HTML: escaped, line breaks as <br>. */
export function textToHtml(text: string): string {
  return escapeHtml(text).replace(/\r\n|\r|\n/g, '<br>');
}

/**
 * A readable plain-text version of an HTML body: hidden blocks dropped, block ends and <br> as line breaks,
 * other tags removed, entities decoded, blank runs collapsed. Linear in the input (indexOf, no backtracking regex).
 */
export function htmlToText(html: string): string {
  // ASCII only: toLowerCase() may change the length of other characters, and the indexes must match.
  const lowerHtml = html.replace(/[A-Z]+/g, (upper) => upper.toLowerCase());
  let out = '';
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) {
      out += html.slice(i);
      break;
    }
    out += html.slice(i, lt);
    const hidden = HIDDEN_BLOCKS.find(
      ([open]) => lowerHtml.startsWith(open, lt) && (open === '<!--' || !/[a-z0-9]/.test(lowerHtml[lt + open.length] ?? '')),
    );
    if (hidden) {
      const close = lowerHtml.indexOf(hidden[1], lt + hidden[0].length);
      if (close < 0) break;
      const end = html.indexOf('>', close);
      i = end < 0 ? html.length : end + 1;
      continue;
    }
    const gt = html.indexOf('>', lt);
    if (gt < 0) {
      out += html.slice(lt);
      break;
    }
    const tag = html.slice(lt, Math.min(gt + 1, lt + 16));
    if (BLOCK_TAG.test(tag)) out += '\n\n';
    else if (LINE_TAG.test(tag)) out += '\n';
    else if (/^<\/t[dh]\b/i.test(html.slice(lt, lt + 5))) out += ' ';
    i = gt + 1;
  }
  return decodeEntities(out)
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *\r?\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function decodeEntities(text: string): string {
  return text.replace(/&(#\d{1,7}|#x[0-9a-f]{1,6}|[a-z]{2,8});/gi, (entity, body: string) => {
    if (body[0] !== '#') return NAMED_ENTITIES[body.toLowerCase()] ?? entity;
    const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
    return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : entity;
  });
}
