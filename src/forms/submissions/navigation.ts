import type { Request } from 'express';
import { FormLanguage, formLanguage } from '../i18n/language';
import type { SubmissionRoute } from './form-targets';

/**
 * Whether a post is a script's request rather than a page the browser navigates to (D-25, amended): an XHR or JSON
 * body; a Sec-Fetch-Mode other than `navigate` (fetch() sends `cors`); an Accept without text/html (fetch()'s default
 * and curl's: any type). A request with neither header (test tools, old clients) is a form post as before: redirected.
 */
export function wantsJson(request: Request): boolean {
  if (isXhr(request)) return true;
  if (request.is('application/json')) return true;
  const mode = request.get('sec-fetch-mode');
  if (mode) return mode.toLowerCase() !== 'navigate';
  const accept = request.get('accept');
  return Boolean(accept?.trim()) && !/text\/html/i.test(accept!);
}

/** A browser's own form post, whose answer the visitor sees as a page: errors are answered with one. */
export function isNavigation(request: Request): boolean {
  if (isXhr(request) || request.is('application/json')) return false;
  const mode = request.get('sec-fetch-mode');
  if (mode) return mode.toLowerCase() === 'navigate';
  return /text\/html/i.test(request.get('accept') ?? '');
}

/**
 * The language of the visitor's pages: the posted `_language` (read from the body as the parser left it: an error may
 * come before the fields are checked), else Accept-Language.
 */
export function requestLanguage(request: Request): FormLanguage {
  const body: unknown = request.body;
  const posted = body && typeof body === 'object' ? (body as Record<string, unknown>)._language : undefined;
  return formLanguage(typeof posted === 'string' ? posted : undefined, request.get('accept-language'));
}

/**
 * The page of an origin that may post to the form, to link back to from our pages: the Referer when it is of that
 * origin, else the origin's home page. Null without such an origin: our domain links to no page a request chose.
 */
export function backLink(request: Request, allowedOrigin: string | null): string | null {
  if (!allowedOrigin) return null;
  const referer = httpUrl(request.get('referer'));
  return referer?.origin === allowedOrigin ? referer.href : `${allowedOrigin}/`;
}

export function httpUrl(value: string | undefined): URL | null {
  if (!value) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/**
 * Only XMLHttpRequest's marker: Android's WebView sends `X-Requested-With: <app package>` on the pages it navigates to.
 */
function isXhr(request: Request): boolean {
  return request.get('x-requested-with')?.toLowerCase() === 'xmlhttprequest';
}

/** The route a submission path names (for preflights, whose handler has no typed params, and for error answers). */
export function routeOfPath(path: string): SubmissionRoute {
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((part) => safeDecode(part));
  if (parts[0] === 'v1' && parts.length === 3) return { kind: 'domain', domain: parts[1], slug: 'send' };
  if (parts[0] === 'submit' && parts.length === 2) return { kind: 'reference', ref: parts[1] };
  if (parts[0] === 'f' && parts.length === 2) return { kind: 'form', id: parts[1] };
  if ((parts[0] === 'f' || parts[0] === 'c') && parts.length === 3) return { kind: 'collection', collection: parts[1], slug: parts[2] };
  return { kind: 'domain', domain: parts[0] ?? '', slug: parts[1] ?? '' };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
