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
  /** The Retry-After header, as sent. */
  retryAfter: string | null;
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

/** Idle connections are closed before common servers' own keep-alive limit (5 s in Node, nginx 75 s). */
const IDLE_SOCKET_MS = 4000;
const MAX_AGENTS = 500;
const agents = new Map<string, http.Agent>();

/**
 * A keep-alive agent per receiver and checked address set: deliveries to one receiver reuse connections (a new
 * TCP, and TLS, handshake per event would cost more than the event), and a connection is only reused for a
 * request whose freshly checked addresses are the ones it was opened to.
 */
function agentFor(url: URL, addresses: TargetAddress[] | null): http.Agent {
  const key = `${url.protocol}//${url.host}|${addresses?.map((a) => a.address).join(',') ?? 'dns'}`;
  let agent = agents.get(key);
  if (agent) {
    // Most recently used last: the first one is the one to drop.
    agents.delete(key);
  } else {
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
    agent = url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    if (agents.size >= MAX_AGENTS) {
      const [oldest, dropped] = agents.entries().next().value!;
      agents.delete(oldest);
      dropped.destroy();
    }
  }
  agents.set(key, agent);
  return agent;
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
        agent: agentFor(url, addresses),
        signal,
        ...(addresses ? { lookup: pinnedLookup(addresses) } : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = () =>
          resolve({
            statusCode: response.statusCode ?? 0,
            excerpt: Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8'),
            retryAfter: response.headers['retry-after'] ?? null,
          });
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
