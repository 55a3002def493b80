import { escapeHtml } from '../common/escape-html';
import type { UnsubscribeTarget } from './tracking.service';

/** The unsubscribe pages: self-contained (no scripts, no external assets), every value escaped. */

const STYLE =
  'body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f6f7f9;color:#1f2328;margin:0}' +
  'main{max-width:32rem;margin:15vh auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.08)}' +
  'h1{font-size:1.5rem;margin:0 0 .75rem}p{line-height:1.5;margin:.5rem 0}label{display:block;margin:1rem 0 .25rem}' +
  'input{font:inherit;padding:.5rem;width:100%;box-sizing:border-box;border:1px solid #c9ced6;border-radius:6px}' +
  'button{font:inherit;margin-top:1rem;padding:.6rem 1.2rem;border:0;border-radius:6px;background:#1f2328;color:#fff;cursor:pointer}';

/** Headers of every page: nothing loads from elsewhere, the form posts only back here, the token leaks to no referrer. */
export const PAGE_HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store, private',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'X-Robots-Tag': 'noindex',
};

/** The confirmation page of GET /u/{token}: a form that posts back to the same URL. */
export function confirmPage(target: UnsubscribeTarget): string {
  const from = escapeHtml(target.from);
  const question = target.email
    ? `<p>Unsubscribe <strong>${escapeHtml(target.email)}</strong> from emails sent by ${from}?</p>`
    : `<p>This email went to several addresses. Which one should no longer get emails sent by ${from}?</p>`;
  const field = target.email
    ? ''
    : '<label for="email">Email address</label><input id="email" name="email" type="email" required autocomplete="email">';
  return page('Unsubscribe', `${question}<form method="post">${field}<button type="submit">Unsubscribe</button></form>`);
}

export function unsubscribedPage(target: { email: string; from: string }): string {
  return page(
    'You are unsubscribed',
    `<p><strong>${escapeHtml(target.email)}</strong> will get no more emails sent by ${escapeHtml(target.from)}.</p><p>You can close this page.</p>`,
  );
}

export function notFoundPage(): string {
  return page('Link not found', '<p>This unsubscribe link is not known. It may have been mistyped or shortened by your email program.</p>');
}

function page(title: string, body: string): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>` +
    `<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`
  );
}
