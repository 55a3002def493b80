import { escapeHtml } from '../common/escape-html';
import type { UnsubscribeResult, UnsubscribeTarget } from './tracking.service';

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

/** What the address stops getting: a list send's list only, else everything from the sender. */
function scope(target: { from: string; list: string | null }): string {
  const from = escapeHtml(target.from);
  if (target.list === null) return `emails sent by ${from}`;
  return target.list ? `the mailing list <strong>${escapeHtml(target.list)}</strong> (sent by ${from})` : `this mailing list of ${from}`;
}

/** The confirmation page of GET /u/{token}: a form that posts back to the same URL. */
export function confirmPage(target: UnsubscribeTarget): string {
  if (!target.email) {
    const question =
      `<p>This email went to several addresses. Which one should no longer get ${scope(target)}? ` +
      'We will email that address a link to confirm.</p>';
    const field = '<label for="email">Email address</label><input id="email" name="email" type="email" required autocomplete="email">';
    return page('Unsubscribe', `${question}<form method="post">${field}<button type="submit">Send the link</button></form>`);
  }
  const question = `<p>Unsubscribe <strong>${escapeHtml(target.email)}</strong> from ${scope(target)}?</p>`;
  return page('Unsubscribe', `${question}<form method="post"><button type="submit">Unsubscribe</button></form>`);
}

/**
 * The page after POST /u/{token}. For an address the person typed (`confirmationSent`) nothing is unsubscribed yet,
 * and it reads the same whether or not that address got the email: the page never tells who an email went to.
 */
export function unsubscribedPage(result: UnsubscribeResult): string {
  const email = `<strong>${escapeHtml(result.email)}</strong>`;
  if (result.confirmationSent) {
    const sent = `If this email was sent to ${email}, we sent that address a link to confirm.`;
    return page('Check your inbox', `<p>${sent}</p><p>Open it to unsubscribe from ${scope(result)}. You can close this page.</p>`);
  }
  const what = result.list === null ? `no more emails sent by ${escapeHtml(result.from)}` : `no more mail from ${scope(result)}`;
  const rest = result.list === null ? '' : '<p>Other emails from this sender still reach you.</p>';
  return page('You are unsubscribed', `<p>${email} will get ${what}.</p>${rest}<p>You can close this page.</p>`);
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
