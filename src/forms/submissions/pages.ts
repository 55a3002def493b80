import { escapeHtml } from '../../common/escape-html';

/** The few HTML pages Mailroom serves itself: plain, self-contained, no scripts. */

const STYLE =
  'body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f6f7f9;color:#1f2328;margin:0}' +
  'main{max-width:32rem;margin:15vh auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.08)}' +
  'h1{font-size:1.5rem;margin:0 0 .75rem}p{line-height:1.5;margin:.5rem 0}';

/** A page with a title and paragraphs; both are escaped. */
export function simplePage(title: string, paragraphs: string[]): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>` +
    `<body><main><h1>${escapeHtml(title)}</h1>${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('')}</main></body></html>`
  );
}

export function thankYouPage(): string {
  return simplePage('Thank you!', ['Your submission has been received.', 'You can close this page or go back to the site.']);
}
