import type { IncomingMessage } from 'node:http';
import { raw, type RequestHandler } from 'express';
import { bodyParserError } from '../common/errors/all-exceptions.filter';
import { verifyJsonBody } from '../common/body-depth';

const PROVIDER_EVENTS_PATH = '/provider/events';

/** `POST /provider/events`, matched as Express matches routes: case-insensitively and with a trailing slash. */
export function isProviderEventsRequest(request: IncomingMessage): boolean {
  return (request.url ?? '').split('?')[0].replace(/\/+$/, '').toLowerCase() === PROVIDER_EVENTS_PATH;
}

/**
 * Reads the body of a provider call as bytes, whatever its type, up to `limit` (gzip, deflate and br inflated): its
 * signature covers the exact bytes sent, and is checked before anything parses them (ProviderSignatureGuard; the
 * JSON is parsed after it, by ProviderEventsBodyInterceptor). The JSON parser leaves these requests alone.
 */
export function readProviderEventsBody(limit: number): RequestHandler {
  return raw({ type: isProviderEventsRequest, limit });
}

/** The body as it arrived (empty when there was none). */
export function providerEventsBodyOf(request: IncomingMessage & { body?: unknown }): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

/**
 * The body of a provider call whose signature was accepted, parsed as the JSON parser parses every other body:
 * UTF-8 only (415), nesting at most MAX_BODY_DEPTH levels (400), an object or an array at the top (else 400
 * MALFORMED_JSON); an empty body is `{}`.
 */
export function parseProviderEventsBody(request: IncomingMessage & { body?: unknown }): unknown {
  const body = providerEventsBodyOf(request);
  if (body.length === 0) return {};
  try {
    verifyJsonBody(request, undefined, body, charsetOf(request));
  } catch (err) {
    throw bodyParserError(err) ?? err;
  }
  const text = body.toString('utf8');
  try {
    if (!/^[ \t\n\r]*[{[]/.test(text)) throw new SyntaxError('not an object or array');
    return JSON.parse(text) as unknown;
  } catch {
    throw bodyParserError({ type: 'entity.parse.failed' })!;
  }
}

/** The charset the Content-Type names, lower-cased; UTF-8 when it names none. */
function charsetOf(request: IncomingMessage): string {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1].toLowerCase() ?? 'utf-8';
}
