import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppException } from './app.exception';
import { ErrorCode } from './error-code';

/** What Node's HTTP parser refused, as the AppException the rest of the API would answer with. */
export function clientErrorOf(error: NodeJS.ErrnoException): AppException {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppException(ErrorCode.RequestHeadersTooLarge, 'The request line and headers are too large (16 KB at most)');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppException(ErrorCode.PayloadTooLarge, 'The chunk extensions of the request body are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppException(ErrorCode.RequestTimeout, 'The request did not arrive in time');
    default:
      return new AppException(ErrorCode.ValidationFailed, 'The request is not well-formed HTTP');
  }
}

/**
 * Requests Node's HTTP parser refuses (a URL and headers over 16 KB, a malformed request line) never reach
 * Express; Node would answer them with a bare status line. This answers them with the D-10 body instead, and
 * closes the connection as Node does.
 */
export function answerClientErrors(server: Server, documentation: string): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const { status, code, message } = clientErrorOf(error);
    const body = JSON.stringify({ error: { code, message }, documentation });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
