import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { postWebhook, RESPONSE_EXCERPT_BYTES } from './webhook-http';

describe('postWebhook', () => {
  let server: Server;
  let port: number;
  const seen: { headers: IncomingHttpHeaders; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        if (req.url === '/redirect') {
          res.writeHead(301, { location: 'http://169.254.169.254/' }).end();
        } else if (req.url === '/long') {
          res.end('x'.repeat(100_000));
        } else if (req.url === '/busy') {
          res.writeHead(503, { 'retry-after': '120' }).end('busy');
        } else if (req.url === '/slow') {
          const timer = setTimeout(() => res.end('late'), 2000);
          res.on('close', () => clearTimeout(timer));
        } else {
          res.end('ok');
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const pinned = [{ address: '127.0.0.1', family: 4 as const }];
  const post = (path: string, signal = AbortSignal.timeout(5000)) =>
    postWebhook(new URL(`http://hooks.invalid:${port}${path}`), '{"a":1}', { 'content-type': 'application/json' }, pinned, signal);

  it('connects to the checked address while Host stays the URL’s name (no DNS lookup of it)', async () => {
    const answer = await post('/hook');
    expect(answer).toEqual({ statusCode: 200, excerpt: 'ok', retryAfter: null });
    const request = seen[seen.length - 1];
    expect(request.headers.host).toBe(`hooks.invalid:${port}`);
    expect(request.headers['content-length']).toBe('7');
    expect(request.body).toBe('{"a":1}');
  });

  it('does not follow redirects', async () => {
    const before = seen.length;
    expect((await post('/redirect')).statusCode).toBe(301);
    expect(seen.length).toBe(before + 1);
  });

  it('keeps only the first 1 KB of the answer', async () => {
    expect((await post('/long')).excerpt).toHaveLength(RESPONSE_EXCERPT_BYTES);
  });

  it('returns the Retry-After header as sent', async () => {
    expect(await post('/busy')).toEqual({ statusCode: 503, excerpt: 'busy', retryAfter: '120' });
  });

  it('gives up when the signal aborts', async () => {
    await expect(post('/slow', AbortSignal.timeout(200))).rejects.toThrow();
  });
});
