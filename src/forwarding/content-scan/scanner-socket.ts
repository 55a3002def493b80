import { connect, type NetConnectOpts } from 'node:net';

/** A scanner that could not give a verdict: unreachable, too slow, or an answer that is not one. */
export class ScannerFailure extends Error {}

/** `host:port`, `[v6 address]:port` or the path of a Unix socket (INBOUND_SPAMD_ADDRESS, INBOUND_CLAMD_ADDRESS). */
export function scannerEndpoint(address: string): NetConnectOpts {
  if (address.startsWith('/')) return { path: address };
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(colon + 1)) };
}

/**
 * Connects to a scanner daemon, writes `request` (a chunk at a time, as the socket drains), half-closes, and
 * resolves with everything the daemon answers until it closes the connection. A ScannerFailure when it cannot be
 * reached, breaks the connection before answering, or the whole exchange takes longer than `timeoutMs`.
 */
export function exchange(name: string, address: string, request: Iterable<Buffer>, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(scannerEndpoint(address));
    const answer: Buffer[] = [];
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(new ScannerFailure(`${name} at ${address}: ${err.message}`));
      else resolve(Buffer.concat(answer));
    };
    const timer = setTimeout(() => settle(new Error(`no verdict within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk: Buffer) => answer.push(chunk));
    // A daemon that refuses the request (clamd past its StreamMaxLength) answers and closes while we still write:
    // what it said is the answer, the broken write is not.
    const closed = (err?: Error) => settle(answer.length ? null : (err ?? new Error('closed the connection without answering')));
    socket.on('end', () => closed());
    socket.on('error', closed);
    socket.on('close', () => closed());
    socket.once('connect', () => {
      void (async () => {
        for (const chunk of request) {
          if (settled) return;
          if (!socket.write(chunk)) await drainedOrClosed(socket);
        }
        socket.end();
      })();
    });
  });
}

/** Resolves once the socket drains or closes, with neither listener left on it (one wait per chunk written). */
function drainedOrClosed(socket: ReturnType<typeof connect>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done).off('close', done);
      resolve();
    };
    socket.once('drain', done).once('close', done);
  });
}
