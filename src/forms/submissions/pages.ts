import { ErrorCode } from '../../common/errors/error-code';
import { escapeHtml } from '../../common/escape-html';
import type { FormLanguage } from '../i18n/language';
import { fieldMessage, PAGE_STRINGS, PageStrings, waitFor } from '../i18n/page-strings';

/** The few HTML pages Mailroom serves itself: plain, self-contained, no scripts. */

const STYLE =
  'body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f6f7f9;color:#1f2328;margin:0}' +
  'main{max-width:32rem;margin:15vh auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.08)}' +
  'h1{font-size:1.5rem;margin:0 0 .75rem}p,li{line-height:1.5;margin:.5rem 0}a{color:#0969da}small{color:#656d76}' +
  'button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:6px;background:#1f6feb;color:#fff;cursor:pointer}';

/** What a page shows; every text is escaped. */
interface PageContent {
  title: string;
  paragraphs: string[];
  /** A list after the paragraphs: a label in bold, then its text. */
  items?: { label: string; text: string }[];
  link?: { href: string; text: string };
  /** A button that posts (no fields) to the page's own URL. */
  button?: string;
  note?: string;
  language?: FormLanguage;
}

function page({ title, paragraphs, items, link, button, note, language = 'en' }: PageContent): string {
  const list = items?.length
    ? `<ul>${items.map(({ label, text }) => `<li><strong>${escapeHtml(label)}</strong>: ${escapeHtml(text)}</li>`).join('')}</ul>`
    : '';
  return (
    `<!doctype html><html lang="${language}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>` +
    `<body><main><h1>${escapeHtml(title)}</h1>${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('')}${list}` +
    (link ? `<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.text)}</a></p>` : '') +
    (button ? `<form method="post"><p><button type="submit">${escapeHtml(button)}</button></p></form>` : '') +
    (note ? `<p><small>${escapeHtml(note)}</small></p>` : '') +
    '</main></body></html>'
  );
}

/** A page with a title and paragraphs; both are escaped. */
export function simplePage(title: string, paragraphs: string[], language: FormLanguage = 'en'): string {
  return page({ title, paragraphs, language });
}

/** A page whose button posts to its own URL (a link's action that a mail scanner following the link must not take). */
export function buttonPage(title: string, paragraphs: string[], button: string, note: string, language: FormLanguage = 'en'): string {
  return page({ title, paragraphs, button, note, language });
}

/** Where a browser lands after a post to a form without a redirect URL; `back` is a page of the site that posted. */
export function thankYouPage(language: FormLanguage = 'en', back: string | null = null): string {
  const s = PAGE_STRINGS[language];
  return page({
    title: s.thanksTitle,
    paragraphs: back ? [s.thanksReceived] : [s.thanksReceived, s.thanksClose],
    link: back ? { href: back, text: s.backToSite } : undefined,
    language,
  });
}

/** A D-10 error answer: its status, its body's error, and its Retry-After (seconds), if any. */
export interface ErrorAnswer {
  status: number;
  error: { code: string; message: string; details?: Record<string, unknown> };
  retryAfter?: number;
  /** For an account quota's refusal: the form's `global_limited` text, written by its owner for visitors. */
  ownerQuotaText?: string;
}

/**
 * The page a browser's form post gets instead of the D-10 body: what went wrong (per field for a refused field, the
 * wait in human terms for a limit), in the visitor's language, with a link back to the page that posted.
 */
export function errorPage(answer: ErrorAnswer, language: FormLanguage, back: string | null): string {
  const s = PAGE_STRINGS[language];
  const { paragraphs, items } = explain(answer, s);
  return page({
    title: s.errorTitle,
    paragraphs: back ? paragraphs : [...paragraphs, s.useBackButton],
    items,
    link: back ? { href: back, text: s.backToForm } : undefined,
    note: `${s.errorCode}: ${answer.error.code}`,
    language,
  });
}

function explain({ status, error, retryAfter, ownerQuotaText }: ErrorAnswer, s: PageStrings): Pick<PageContent, 'paragraphs' | 'items'> {
  // An account quota is not the visitor's doing, and the API's message is for the account: the owner's text, else ours.
  const code = error.code as ErrorCode;
  if (code === ErrorCode.QuotaExceeded || code === ErrorCode.AccountQuotaExceeded) {
    return { paragraphs: [ownerQuotaText ?? s.unavailable] };
  }
  if (status === 429) {
    const retry = Number(error.details?.retry_after ?? retryAfter);
    return { paragraphs: [Number.isFinite(retry) && retry > 0 ? s.tooMany(waitFor(retry, s)) : s.tooManyLater] };
  }
  switch (code) {
    case ErrorCode.ValidationFailed: {
      const fields = Array.isArray(error.details?.fields) ? (error.details.fields as { field: string; message: string }[]) : [];
      if (!fields.length) return { paragraphs: [s.notAccepted, error.message] };
      return { paragraphs: [s.fixFields], items: fields.map(({ field, message }) => ({ label: field, text: fieldMessage(message, s) })) };
    }
    case ErrorCode.ChallengeFailed:
      return { paragraphs: [s.challengeFailed] };
    case ErrorCode.PayloadTooLarge:
      return { paragraphs: [s.tooLarge, error.message] };
    case ErrorCode.NotFound:
      return { paragraphs: [s.notFound] };
    case ErrorCode.MalformedJson:
    case ErrorCode.UnsupportedMediaType:
      return { paragraphs: [s.notAccepted, error.message] };
  }
  if (status === 401 || status === 403) return { paragraphs: [s.originRefused] };
  return { paragraphs: [s.unavailable] };
}
