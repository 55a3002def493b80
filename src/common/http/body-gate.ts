import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { requestBodyBytesInFlight, requestBodyRefusals } from '../../metrics/metrics';
import { writeErrorBody } from '../errors/all-exceptions.filter';
import { AppException } from '../errors/app.exception';
import { ErrorCode } from '../errors/error-code';
import { openRouteOf } from '../rate-limit/rate-limit.policy';
import { ByteBudget } from '../byte-budget';

/** The body limits of one process, in bytes. */
export interface BodyLimits {
  /** Every body but an API call with a valid key and a form upload. */
  body: number;
  /** An API call (outside the open routes) with a valid key: attachments travel in send and batch bodies. */
  api: number;
  /** A multipart post to a form route: its files go to disk, not to the heap, but are read all the same. */
  upload: number;
  /** All bodies being read at once in this process. */
  inFlight: number;
}

/**
 * After the answer to a request whose body has not all arrived, the rest is still read (and thrown away) for this
 * long and this many bytes at most, so that a client that sends before it reads gets the answer; then the
 * connection is closed.
 */
const LINGER_MS = 2000;
const LINGER_BYTES = 4 * 1024 * 1024;

/** The limit a request's body falls under: by route, content type, and whether it carries a valid API key. */
export function bodyLimitOf(request: Pick<Request, 'method' | 'path' | 'headers'>, keyHolder: boolean, limits: BodyLimits): number {
  const openRoute = openRouteOf(request.method, request.path);
  if (openRoute === 'form-post' && isMultipart(request)) return limits.upload;
  return openRoute === null && keyHolder ? limits.api : limits.body;
}

function isMultipart(request: Pick<Request, 'headers'>): boolean {
  return /^\s*multipart\//i.test(request.headers['content-type'] ?? '');
}

/** Content-Length as a number, or null for a chunked body (Node's parser refuses a malformed length). */
function announcedLength(request: Request): number | null {
  const header = request.headers['content-length'];
  return header === undefined ? null : Number(header);
}

function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || (announcedLength(request) ?? 0) > 0;
}

function megabytes(bytes: number): string {
  const mb = bytes / 1024 / 1024;
  return Number.isInteger(mb) ? `${mb} MB` : `${bytes} bytes`;
}

function tooLarge(limit: number): AppException {
  return new AppException(ErrorCode.PayloadTooLarge, `The request body may be at most ${megabytes(limit)} here`, { limit_bytes: limit });
}

/**
 * Bounds every request body before it is read (mounted after the limiter, right before the body parsers): a body
 * over its route's limit is refused (413) before a byte is read when its Content-Length says so, or cut as it
 * arrives; and the bytes of all bodies being read at once are capped (BODY_BYTES_IN_FLIGHT): a request that does not
 * fit is answered 503 with Retry-After, unread. A body counts for its Content-Length, or for its route's limit when it
 * has none or is compressed (what it inflates to is bounded only by that limit).
 */
export class BodyGate {
  private readonly inFlight: ByteBudget;
  private readonly limitOfRequest = new WeakMap<Request, number>();

  constructor(
    private readonly limits: BodyLimits,
    /** Whether the request carries a valid API key (asked only for a body outside the open routes). */
    private readonly isKeyHolder: (request: Request) => Promise<boolean>,
    private readonly documentation: string,
  ) {
    this.inFlight = new ByteBudget(limits.inFlight);
  }

  /** The middleware. */
  readonly admit: RequestHandler = (request, response, next) => {
    this.admitBody(request, response).then(() => next(), next);
  };

  /**
   * A body parser per limit, each used for the requests whose body falls under it (a compressed body is bounded
   * by the parser as it inflates).
   */
  parser(make: (limit: number) => RequestHandler): RequestHandler {
    const parsers = new Map<number, RequestHandler>();
    return (request: Request, response: Response, next: NextFunction) => {
      const limit = this.limitOfRequest.get(request) ?? this.limits.body;
      let parse = parsers.get(limit);
      if (!parse) parsers.set(limit, (parse = make(limit)));
      parse(request, response, next);
    };
  }

  private async admitBody(request: Request, response: Response): Promise<void> {
    lingerAfterAnswer(request, response);
    if (!hasBody(request)) return;
    const keyHolder = openRouteOf(request.method, request.path) === null && (await this.isKeyHolder(request));
    const limit = bodyLimitOf(request, keyHolder, this.limits);
    const announced = announcedLength(request);
    if (announced !== null && announced > limit) {
      requestBodyRefusals.inc({ reason: 'too_large' });
      throw tooLarge(limit);
    }
    const compressed = (request.headers['content-encoding'] ?? 'identity').toLowerCase() !== 'identity';
    const reserved = announced !== null && !compressed ? announced : limit;
    const release = this.inFlight.tryAcquire(reserved);
    if (!release) {
      requestBodyRefusals.inc({ reason: 'busy' });
      throw new AppException(
        ErrorCode.ServiceUnavailable,
        'The service is reading as many request bodies as it may at once; retry shortly',
        undefined,
        { 'Retry-After': '1' },
      );
    }
    requestBodyBytesInFlight.inc(reserved);
    response.once('close', () => {
      release();
      requestBodyBytesInFlight.dec(reserved);
    });
    this.limitOfRequest.set(request, limit);
    this.meter(request, response, limit);
  }

  /**
   * Counts the body as it arrives and cuts it past `limit`: 413 at once, the rest thrown away. The counting
   * listener puts the request in flowing mode; the body parsers that follow attach theirs in the same tick, but
   * multer reads later (after the guards): a multipart body is paused until multer pipes it.
   */
  private meter(request: Request, response: Response, limit: number): void {
    let received = 0;
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= limit) return;
      request.off('data', count);
      requestBodyRefusals.inc({ reason: 'too_large' });
      request.unpipe();
      request.resume();
      // Answered already (the route did not wait for its body): lingerAfterAnswer closes the connection.
      if (!response.headersSent) writeErrorBody(response, tooLarge(limit), this.documentation);
    };
    request.on('data', count);
    if (isMultipart(request)) request.pause();
  }
}

/**
 * Once the answer is sent, whatever of the body has not arrived is read and thrown away (Node keeps a connection
 * open for the next request only once the body is read) for LINGER_MS and LINGER_BYTES at most. Then the connection
 * is closed in two steps, as web servers do (a lingering close): our side first, still reading, so that the client
 * reads the answer instead of a reset that would discard it; then, LINGER_MS later, all of it. A refused client reads
 * its answer, and a body that never ends holds nothing.
 */
function lingerAfterAnswer(request: Request, response: Response): void {
  response.once('finish', () => {
    if (request.complete) return;
    let discarded = 0;
    let closing = false;
    const close = () => {
      if (closing) return;
      closing = true;
      const { socket } = request;
      socket.end();
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    };
    const timer = setTimeout(close, LINGER_MS);
    const discard = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > LINGER_BYTES) close();
    };
    const done = () => {
      clearTimeout(timer);
      request.off('data', discard);
    };
    request.on('data', discard);
    request.resume();
    request.once('end', done);
    request.once('close', done);
  });
}
