import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { TargetAddress } from './webhook-targets';

/** How much of a receiver's answer is kept for the delivery log. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface WebhookAnswer {
  statusCode: number;
  /** The first RESPONSE_EXCERPT_BYTES of the body, as text. */
  excerpt: string;
}

/** A `lookup` that answers the addresses already checked, whatever DNS would say now. */
function pinnedLookup(addresses: TargetAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) {
      (callback as unknown as (err: null, addresses: LookupAddress[]) => void)(null, addresses);
      return;
    }
    const wanted = addresses.find((a) => !options.family || a.family === options.family) ?? addresses[0];
    callback(null, wanted.address, wanted.family);
  };
}

/**
 * POSTs `body` once. Redirects are not followed (the answer is returned as it is); with `addresses` the connection
 * goes to one of them, while the Host header and TLS name stay the URL's. Rejects on connection errors and when
 * `signal` aborts.
 */
export function postWebhook(
  url: URL,
  body: string,
  headers: Record<string, string>,
  addresses: TargetAddress[] | null,
  signal: AbortSignal,
): Promise<WebhookAnswer> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        signal,
        ...(addresses ? { lookup: pinnedLookup(addresses) } : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = () =>
          resolve({ statusCode: response.statusCode ?? 0, excerpt: Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8') });
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          // The rest of a long answer is not needed: stop reading it.
          if (size >= RESPONSE_EXCERPT_BYTES) response.destroy();
        });
        response.on('close', finish);
        response.on('error', () => undefined);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
