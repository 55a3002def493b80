import type { IncomingMessage } from 'node:http';

const PROVIDER_EVENTS_PATH = '/provider/events';
const RAW_BODY = Symbol('providerEventsRawBody');

type WithRawBody = IncomingMessage & { [RAW_BODY]?: Buffer };

/**
 * Called from the JSON parser's verify hook with the bytes it is about to parse: keeps them for
 * `POST /provider/events` only, whose signature covers the exact bytes sent. Express matches routes
 * case-insensitively and with a trailing slash, so this does too.
 */
export function keepProviderEventsBody(request: IncomingMessage, body: Buffer): void {
  const path = (request.url ?? '').split('?')[0].replace(/\/+$/, '').toLowerCase();
  if (path === PROVIDER_EVENTS_PATH) (request as WithRawBody)[RAW_BODY] = body;
}

/** The body as it arrived (empty when there was none, or it was not JSON). */
export function providerEventsBodyOf(request: IncomingMessage): Buffer {
  return (request as WithRawBody)[RAW_BODY] ?? Buffer.alloc(0);
}
