import net from 'node:net';
import { createServer, Server, Socket } from 'node:net';
import { exchange, ScannerFailure, scannerEndpoint } from './scanner-socket';

describe('scannerEndpoint', () => {
  it('reads host:port, [v6]:port and a Unix socket path', () => {
    expect(scannerEndpoint('spamassassin:783')).toEqual({ host: 'spamassassin', port: 783 });
    expect(scannerEndpoint('[::1]:3310')).toEqual({ host: '::1', port: 3310 });
    expect(scannerEndpoint('/run/clamav/clamd.ctl')).toEqual({ path: '/run/clamav/clamd.ctl' });
  });
});

describe('exchange', () => {
  let server: Server;
  let address: string;
  const sockets: Socket[] = [];
  let behave: (socket: Socket, request: Buffer) => void;

  beforeAll(async () => {
    // Half-open, as the daemons: our end of the request does not close their side.
    server = createServer({ allowHalfOpen: true }, (socket) => {
      sockets.push(socket);
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => behave(socket, Buffer.concat(chunks)));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('writes the whole request, half-closes, and resolves with the whole answer', async () => {
    behave = (socket, request) => socket.end(`got ${request.length}`);
    const big = Buffer.alloc(5 * 1024 * 1024, 1);
    await expect(exchange('test', address, [Buffer.from('head'), big], 5000)).resolves.toEqual(Buffer.from(`got ${big.length + 4}`));
  });

  it('waits for the socket to drain as often as it takes, without leaving a listener behind at each wait', async () => {
    // A daemon that reads slowly, a read every few milliseconds: once the kernel's buffers are full, every write waits.
    const slow = createServer({ allowHalfOpen: true }, (socket) => {
      let received = 0;
      socket.pause();
      const reader = setInterval(() => {
        socket.resume();
        socket.once('data', () => socket.pause());
      }, 2);
      socket.on('data', (chunk: Buffer) => (received += chunk.length));
      socket.on('end', () => {
        clearInterval(reader);
        socket.end(`got ${received}`);
      });
      socket.on('close', () => clearInterval(reader));
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const connect = jest.spyOn(net, 'connect');
    try {
      const chunks = Array.from({ length: 256 }, () => Buffer.alloc(64 * 1024, 1));
      const port = (slow.address() as { port: number }).port;
      await expect(exchange('test', `127.0.0.1:${port}`, chunks, 20_000)).resolves.toEqual(Buffer.from(`got ${256 * 64 * 1024}`));
      const socket = connect.mock.results[0].value as Socket;
      // Node warns past 10 listeners of one event (MaxListenersExceededWarning).
      expect(socket.listenerCount('close')).toBeLessThan(5);
      expect(socket.listenerCount('drain')).toBe(0);
    } finally {
      connect.mockRestore();
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  it('fails on a daemon that never answers, after the time-out', async () => {
    behave = () => undefined;
    const started = Date.now();
    await expect(exchange('test', address, [Buffer.from('x')], 200)).rejects.toThrow(
      new ScannerFailure(`test at ${address}: no verdict within 200 ms`),
    );
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('fails on a daemon that closes without answering, and on one nobody runs', async () => {
    behave = (socket) => socket.destroy();
    await expect(exchange('test', address, [Buffer.from('x')], 5000)).rejects.toBeInstanceOf(ScannerFailure);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(exchange('test', `127.0.0.1:${port}`, [Buffer.from('x')], 5000)).rejects.toThrow(/ECONNREFUSED/);
  });
});
