import type { Request } from 'express';

export type CredentialSource = 'bearer' | 'x-api-key' | 'service-api-key' | 'x-public-token';

/** Reads the one credential a request carries, from any of the spec's headers (D-5). */
export function readCredential(request: Request): { secret: string; source: CredentialSource } | null {
  const authorization = request.headers.authorization;
  if (authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return { secret: match[1], source: 'bearer' };
  }
  const apiKey = header(request, 'x-api-key');
  if (apiKey) return { secret: apiKey, source: 'x-api-key' };
  const serviceKey = header(request, 'service-api-key');
  if (serviceKey) return { secret: serviceKey, source: 'service-api-key' };
  const publicToken = header(request, 'x-public-token');
  if (publicToken) return { secret: publicToken, source: 'x-public-token' };
  return null;
}

function header(request: Request, name: string): string | undefined {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim() || undefined;
}

/** The host of the request's Origin, else of its Referer, lower-cased; null when neither is usable. */
export function requestOriginHost(request: Request): string | null {
  for (const name of ['origin', 'referer']) {
    const value = header(request, name);
    if (!value || value === 'null') continue;
    try {
      return new URL(value).hostname.toLowerCase();
    } catch {
      continue;
    }
  }
  return null;
}
