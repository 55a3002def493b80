import { connect, type Socket } from 'node:net';

/** What came back on a raw connection. */
export interface HostileAnswer {
  status: number;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: any;
  /** Body bytes the client had written when the answer's head arrived. */
  sentBeforeAnswer: number;
}

export interface HostileRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  /**
   * Body bytes to send: with `Content-Length: bodyBytes` unless `chunked`. Sent 64 KB at a time as fast as the
   * server reads them, until all are sent, the server closes, or stop() is called.
   */
  bodyBytes?: number;
  chunked?: boolean;
  /** Send only the head (and a Content-Length announcing bodyBytes), then wait: the server must answer unread. */
  headOnly?: boolean;
  /** The body to send (bodyBytes is its length); else bodyBytes of `x`. */
  body?: Buffer;
  /** How long to wait for the answer (20 s by default). */
  timeoutMs?: number;
}

export interface HostileConnection {
  /** Resolves with the answer once its body is complete; rejects if the connection ends without one. */
  answer: Promise<HostileAnswer>;
  /** Resolves when the server has closed the connection (or it failed). */
  closed: Promise<void>;
  /** Body bytes written so far. */
  readonly sent: number;
  /** Stops sending body bytes (the connection stays open). */
  stop(): void;
  /** Sends the rest of the body after stop(). */
  resume(): void;
  destroy(): void;
}

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/**
 * One request on its own connection, written byte for byte, with a body sent the way a hostile client sends it:
 * big, announced or chunked, as long as the server takes it. Write errors (the server closed) end the sending.
 */
export function hostileRequest(port: number, request: HostileRequest): HostileConnection {
  const socket: Socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  const total = request.body?.length ?? request.bodyBytes ?? 0;
  const framing = request.chunked
    ? { 'Transfer-Encoding': 'chunked' }
    : total > 0 || request.headOnly
      ? { 'Content-Length': String(total) }
      : {};
  const headers = { Host: 'mailroom.test', Connection: 'keep-alive', ...framing, ...request.headers };
  const head = `${request.method} ${request.path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;

  let sent = 0;
  let stopped = false;
  let ended = false;
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  socket.once('close', () => (ended = true));

  let resolveAnswer!: (answer: HostileAnswer) => void;
  let rejectAnswer!: (error: Error) => void;
  const answer = new Promise<HostileAnswer>((resolve, reject) => {
    resolveAnswer = resolve;
    rejectAnswer = reject;
  });
  answer.catch(() => undefined);
  const timeoutMs = request.timeoutMs ?? 20_000;
  const timer = setTimeout(() => rejectAnswer(new Error(`${request.method} ${request.path}: no answer within ${timeoutMs} ms`)), timeoutMs);
  timer.unref();
  void answer.finally(() => clearTimeout(timer)).catch(() => undefined);
  let received = Buffer.alloc(0);
  let headAt: { status: number; headers: Record<string, string>; bodyStart: number; sent: number } | null = null;
  socket.on('data', (data: Buffer) => {
    received = Buffer.concat([received, data]);
    if (!headAt) {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const parsed: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        parsed[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      headAt = { status: Number(statusLine.split(' ')[1]), headers: parsed, bodyStart: end + 4, sent };
    }
    const length = Number(headAt.headers['content-length'] ?? 0);
    if (received.length - headAt.bodyStart < length) return;
    const text = received.subarray(headAt.bodyStart, headAt.bodyStart + length).toString('utf8');
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    resolveAnswer({ status: headAt.status, headers: headAt.headers, body, sentBeforeAnswer: headAt.sent });
  });
  socket.once('close', () => rejectAnswer(new Error(`${request.method} ${request.path}: the connection closed without an answer`)));

  const write = (bytes: Buffer | string) => new Promise<boolean>((resolve) => socket.write(bytes, (error) => resolve(!error)));
  const piece = () => {
    const size = Math.min(CHUNK.length, total - sent);
    return request.body ? request.body.subarray(sent, sent + size) : CHUNK.subarray(0, size);
  };
  const pump = async () => {
    while (sent < total && !stopped && !ended) {
      const bytes = piece();
      const framed = request.chunked ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]) : bytes;
      if (!(await write(framed))) return;
      sent += bytes.length;
    }
    if (request.chunked && sent >= total && !ended) await write('0\r\n\r\n');
  };
  void (async () => {
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    await write(head);
    if (!request.headOnly) await pump();
  })();

  return {
    answer,
    closed,
    get sent() {
      return sent;
    },
    stop: () => {
      stopped = true;
    },
    resume: () => {
      stopped = false;
      void pump();
    },
    destroy: () => socket.destroy(),
  };
}
