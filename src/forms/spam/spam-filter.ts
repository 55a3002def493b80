import { ownValue } from '../../common/records';
import type { SubmittedFields } from '../form-submission.entity';

/** The hidden field browser forms carry; it must stay empty (D-27). */
export const DEFAULT_HONEYPOT = '_service_honeypot';

/**
 * Honeypots that trip whatever the form names as its own: ours, Formspree's and Basin's `_gotcha`, and Web3Forms'
 * `botcheck` (a hidden checkbox: a browser sends nothing, or an empty value; a bot ticks it, "on"). None of them
 * ever holds a visitor's data, so a form moved from those services keeps its trap unchanged.
 */
export const DEFAULT_HONEYPOTS: readonly string[] = [DEFAULT_HONEYPOT, '_gotcha', 'botcheck'];

/** How strict the content filter is; a form with `spam_protection.level: off` does not call it. */
export type ContentFilterLevel = 'low' | 'medium' | 'high';

/** Links allowed across all fields before a submission counts as spam. */
export const MAX_LINKS: Record<Exclude<ContentFilterLevel, 'low'>, number> = { medium: 3, high: 1 };

/**
 * Phrases of classic form spam (pharma, gambling, SEO, money schemes), matched case-insensitively as whole
 * words, plural allowed. Kept specific: a word a real customer may write ("casino", "forex", "work from
 * home") is only listed inside a phrase that spam uses.
 */
export const SPAM_PHRASES: readonly string[] = [
  'viagra',
  'cialis',
  'levitra',
  'online casino',
  'crypto investment',
  'bitcoin doubler',
  'forex signal',
  'loan offer',
  'payday loan',
  'make money fast',
  'seo service',
  'backlink',
  'guest post',
  'first page of google',
  'replica watch',
];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const PHRASE_PATTERNS = SPAM_PHRASES.map((phrase) => ({
  phrase,
  pattern: new RegExp(`(?<![\\p{L}\\p{N}])${phrase.split(' ').map(escapeRegExp).join('\\s+')}(?:e?s)?(?![\\p{L}\\p{N}])`, 'iu'),
}));

const LINK = /\bhttps?:\/\/[^\s<>"']+|\bwww\.[^\s<>"'.]+\.[^\s<>"']+/gi;
/** An HTML anchor to an absolute URL (spam anchors always are), or a BBCode link. */
const MARKUP_LINK = /<a\s[^>]*href\s*=\s*["']?\s*(?:https?:)?\/\/|\[(?:url|link)[=\]]/i;

/**
 * The first honeypot (the form's own name, then DEFAULT_HONEYPOTS) holding anything but whitespace, or null.
 * `fields` are all the posted fields, control fields included.
 */
export function trippedHoneypot(fields: SubmittedFields, honeypotName: string = DEFAULT_HONEYPOT): string | null {
  const names = [honeypotName, ...DEFAULT_HONEYPOTS];
  return names.find((name) => valuesOf(ownValue(fields, name)).some((value) => value.trim() !== '')) ?? null;
}

/**
 * Why the submission looks like spam, or null. Only user fields count (names not starting with `_`). No
 * rule looks at the language or script of the text, and markup such as `<script>` is not spam by itself
 * (values are escaped wherever they are shown).
 * - low: the phrase list only.
 * - medium: phrases; HTML anchors or BBCode links; more than 3 links (http(s)://, www.) across all fields.
 * - high: as medium, but more than 1 link is too many.
 */
export function contentFilterReason(fields: SubmittedFields, level: ContentFilterLevel = 'medium'): string | null {
  const values = Object.entries(fields)
    .filter(([name]) => !name.startsWith('_'))
    .flatMap(([, value]) => valuesOf(value));

  for (const value of values) {
    const hit = PHRASE_PATTERNS.find(({ pattern }) => pattern.test(value));
    if (hit) return `spam phrase "${hit.phrase}"`;
  }
  if (level === 'low') return null;

  if (values.some((value) => MARKUP_LINK.test(value))) return 'HTML or BBCode link';
  const links = values.reduce((count, value) => count + (value.match(LINK)?.length ?? 0), 0);
  if (links > MAX_LINKS[level]) return `too many links (${links})`;
  return null;
}

function valuesOf(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string');
}
