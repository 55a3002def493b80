import { request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  body: any;
}

export interface RawRequest {
  method: string;
  /** Sent as given: percent-escapes, `..` and all (supertest would normalise some of it). */
  path: string;
  headers?: Record<string, string>;
  /** Sent byte for byte: a compressed or corrupt body, a hand-built deep JSON text. */
  body?: string | Buffer;
  timeoutMs?: number;
}

/** One request on its own connection, with nothing rewritten; rejects if no response arrives in time. */
export function rawRequest(server: Server, { method, path, headers = {}, body, timeoutMs = 10_000 }: RawRequest): Promise<RawResponse> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    // A length, not chunked encoding: Node sends a GET's or DELETE's body unframed without one.
    const framing = body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(body)) };
    const req = request({ host: '127.0.0.1', port, method, path, headers: { ...framing, ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no response to ${method} ${path.slice(0, 200)} within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}
