import { sha256Hex } from '../crypto/sha256';
import type { IdempotencyClaim } from './idempotency.store';

/** What of a request an Idempotency-Key claim is made from. */
export interface IdempotentRequest {
  method: string;
  /** The URL's path, without its query string. */
  path: string;
  body: unknown;
  /** The key that sent the request; undefined without a credential. */
  keyId?: string;
  ip?: string;
}

/**
 * Whose key it is (D-36): the API key that sent it, so that two keys of one account never collide, and
 * whoever holds a public token cannot take the keys of the account's server-side calls. A call without a
 * credential (a form post from a browser) is its client IP's. The route is the method and the path: a form
 * post's path names the form, so one key used on two routes, or on two forms, makes two records.
 */
export function idempotencyClaimOf(request: IdempotentRequest, idempotencyKey: string): IdempotencyClaim {
  const route = `${request.method} ${request.path}`;
  return {
    scope: request.keyId !== undefined ? `key:${request.keyId}` : `ip:${request.ip ?? 'unknown'}`,
    route,
    keyHash: sha256Hex(idempotencyKey),
    requestHash: sha256Hex(`${route}\n${JSON.stringify(request.body ?? null)}`),
  };
}
