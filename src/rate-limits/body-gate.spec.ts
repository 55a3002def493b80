import { once } from 'node:events';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { raw, type NextFunction, type Request, type Response } from 'express';
import type { AppException } from '../common/errors/app.exception';
import { BodyGate, bodyLimitOf, type BodyLimits } from './body-gate';

const limits: BodyLimits = { body: 1, api: 40, upload: 12, inFlight: 128 };
const request = (method: string, path: string, contentType = 'application/json') => ({
  method,
  path,
  headers: { 'content-type': contentType },
});

const MB = 1024 * 1024;

describe('bodyLimitOf', () => {
  it('gives an API call the large limit only with a valid key', () => {
    expect(bodyLimitOf(request('POST', '/email/send'), true, limits)).toBe(40);
    expect(bodyLimitOf(request('POST', '/email/send'), false, limits)).toBe(1);
  });

  it('holds the open routes to the small limit whoever calls, but for uploads to a form', () => {
    for (const path of ['/f/frm_1', '/acme.test/contact', '/provider/events']) {
      expect(bodyLimitOf(request('POST', path), true, limits)).toBe(1);
    }
    for (const path of ['/t/o/token', '/u/token'])
      expect(bodyLimitOf(request('POST', path), true, { ...limits, body: MB })).toBe(16 * 1024);
    expect(bodyLimitOf(request('POST', '/f/frm_1', 'multipart/form-data; boundary=x'), false, limits)).toBe(12);
    expect(bodyLimitOf(request('POST', '/provider/events', 'multipart/form-data; boundary=x'), false, limits)).toBe(1);
  });
});

describe('BodyGate', () => {
  const gateLimits: BodyLimits = { body: MB, api: 4 * MB, upload: 2 * MB, inFlight: 16 * MB };
  let server: Server;
  let port: number;
  let keyLookupMs = 0;

  beforeAll(async () => {
    const gate = new BodyGate(
      gateLimits,
      async (request) => {
        await new Promise((resolve) => setTimeout(resolve, keyLookupMs));
        return request.headers.authorization === 'Bearer key';
      },
      'http://docs',
    );
    const app = express();
    app.use(gate.admit);
    app.use(gate.parser((limit) => raw({ limit, type: () => true })));
    app.use((_request: Request, response: Response) => response.status(204).end());
    app.use((error: AppException, _request: Request, response: Response, _next: NextFunction) => response.status(error.status).end());
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  /** Announces `bytes` from `from` (a loopback address) and sends them only when `send` is called; the status once answered. */
  function post(path: string, bytes: number, from: string, headers: Record<string, string> = {}) {
    const request = httpRequest({
      port,
      host: '127.0.0.1',
      localAddress: from,
      method: 'POST',
      path,
      headers: { ...headers, 'Content-Length': bytes },
    });
    const status = new Promise<number>((resolve, reject) => {
      request.on('response', (response) => resolve(response.resume().statusCode!));
      request.on('error', reject);
    });
    request.flushHeaders();
    return { status, send: () => request.end(Buffer.alloc(bytes)), abort: () => request.destroy() };
  }

  /** Whether `status` settles within a short while (an unread body is answered at once, a held one never). */
  const answeredSoon = (status: Promise<number>) =>
    Promise.race([status, new Promise<null>((resolve) => setTimeout(() => resolve(null), 300))]);

  it('takes nothing for a client that left while its key was looked up', async () => {
    keyLookupMs = 200;
    // Four clients announce 4 MB each (the whole budget) and leave before their keys are found.
    for (const gone of Array.from({ length: 4 }, () => post('/email/send', 4 * MB, '127.0.0.2', { Authorization: 'Bearer key' }))) {
      gone.status.catch(() => undefined);
      setTimeout(gone.abort, 50);
    }
    await new Promise((resolve) => setTimeout(resolve, 400));
    keyLookupMs = 0;
    const next = post('/email/send', 4 * MB, '127.0.0.2', { Authorization: 'Bearer key' });
    next.send();
    expect(await next.status).toBe(204);
  });

  it('gives one client address a few bodies’ worth and callers without a key half of the budget', async () => {
    // Anonymous bodies: at most 8 MB together, 4 MB of one address. Each holder announces 1 MB and sends nothing.
    const first = Array.from({ length: 4 }, () => post('/f/frm_1', MB, '127.0.0.3'));
    expect(await answeredSoon(first[0].status)).toBeNull();
    expect(await post('/f/frm_1', MB, '127.0.0.3').status).toBe(503);
    const second = Array.from({ length: 4 }, () => post('/f/frm_1', MB, '127.0.0.4'));
    expect(await answeredSoon(second[3].status)).toBeNull();
    expect(await post('/f/frm_1', MB, '127.0.0.5').status).toBe(503);
    // A keyed call still has the other half.
    const keyed = post('/email/send', 4 * MB, '127.0.0.5', { Authorization: 'Bearer key' });
    keyed.send();
    expect(await keyed.status).toBe(204);
    // Bodies that arrive give their bytes back.
    for (const holder of [...first, ...second]) holder.send();
    expect(await Promise.all([...first, ...second].map((holder) => holder.status))).toEqual(Array(8).fill(204));
    const again = post('/f/frm_1', MB, '127.0.0.3');
    again.send();
    expect(await again.status).toBe(204);
  });
});
