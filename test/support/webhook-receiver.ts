import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedHook<Body> {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: Body;
}

/** A real HTTP endpoint that webhooks are delivered to: it keeps every delivery and answers as told. */
export interface WebhookReceiver<Body> {
  /** `http://127.0.0.1:<port>`: register `${base}/<any path>`. */
  readonly base: string;
  readonly received: ReceivedHook<Body>[];
  /** The status answered per path: 200 unless set; a 302 points at `${base}/redirected`. */
  readonly answers: Map<string, number>;
  close(): Promise<void>;
}

export async function startWebhookReceiver<Body = Record<string, unknown>>(): Promise<WebhookReceiver<Body>> {
  const received: ReceivedHook<Body>[] = [];
  const answers = new Map<string, number>();
  let base = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '';
      received.push({ path, headers: req.headers, raw, body: JSON.parse(raw) as Body });
      res.statusCode = answers.get(path) ?? 200;
      if (res.statusCode === 302) res.setHeader('location', `${base}/redirected`);
      res.end(res.statusCode === 200 ? 'thanks' : 'receiver down');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, received, answers, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
