import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { requestBodyBytesInFlight, requestBodyRefusals } from '../metrics/metrics';
import { writeErrorBody } from '../common/errors/all-exceptions.filter';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { ByteBudget } from '../common/byte-budget';
import { clientIpKey, openRouteOf } from './rate-limit.policy';

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

/** A tracking link takes no body but a one-click unsubscribe's (`List-Unsubscribe=One-Click`). */
const TRACKING_BODY_BYTES = 16 * 1024;

/**
 * Emitted on a request whose body the gate cut past its limit. A consumer that was piped the body (multer's
 * busboy) never sees its end: the upload storage listens for this to fail the file it was writing.
 */
export const BODY_CUT = 'mailroom:body-cut';

/** The limit a request's body falls under: by route, content type, and whether it carries a valid API key. */
export function bodyLimitOf(request: Pick<Request, 'method' | 'path' | 'headers'>, keyHolder: boolean, limits: BodyLimits): number {
  const openRoute = openRouteOf(request.method, request.path);
  if (openRoute === 'form-post' && isMultipart(request)) return limits.upload;
  if (openRoute === 'tracking') return Math.min(limits.body, TRACKING_BODY_BYTES);
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
 * has none or is compressed (what it inflates to is bounded only by that limit). Bodies of callers without a valid
 * key may take half of the budget, and those of one client address a few bodies' worth of it, so that anonymous
 * clients sending slowly can neither starve the keyed calls nor each other.
 */
export class BodyGate {
  private readonly inFlight: ByteBudget;
  private readonly anonymous: ByteBudget;
  private readonly anonymousPerClient: number;
  private readonly anonymousOfClient = new Map<string, ByteBudget>();
  private readonly limitOfRequest = new WeakMap<Request, number>();

  constructor(
    private readonly limits: BodyLimits,
    /** Whether the request carries a valid API key (asked only for a body outside the open routes). */
    private readonly isKeyHolder: (request: Request) => Promise<boolean>,
    private readonly documentation: string,
  ) {
    this.inFlight = new ByteBudget(limits.inFlight);
    // Half of the budget, but room for one upload at least.
    this.anonymous = new ByteBudget(Math.min(limits.inFlight, Math.max(Math.floor(limits.inFlight / 2), limits.upload)));
    this.anonymousPerClient = Math.max(limits.upload, 4 * limits.body);
  }

  /** The middleware. */
  readonly admit: RequestHandler = (request, response, next) => {
    // The counting listener starts the body flowing: it goes on in the same run as the next middleware (the body
    // parser) attaches its own, so that neither misses a chunk already buffered.
    this.admitBody(request, response).then((limit) => {
      if (limit !== null) this.meter(request, response, limit);
      next();
    }, next);
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

  /** Reserves the body's bytes and answers its limit; null when there is no body to read. */
  private async admitBody(request: Request, response: Response): Promise<number | null> {
    lingerAfterAnswer(request, response);
    if (!hasBody(request)) return null;
    const keyHolder = openRouteOf(request.method, request.path) === null && (await this.isKeyHolder(request));
    // A client gone while its key was looked up has no body left to read, and no 'close' to come for a reservation.
    if (request.destroyed || request.socket.destroyed) return null;
    const limit = bodyLimitOf(request, keyHolder, this.limits);
    const announced = announcedLength(request);
    if (announced !== null && announced > limit) {
      requestBodyRefusals.inc({ reason: 'too_large' });
      throw tooLarge(limit);
    }
    const compressed = (request.headers['content-encoding'] ?? 'identity').toLowerCase() !== 'identity';
    const reserved = announced !== null && !compressed ? announced : limit;
    const release = this.reserve(reserved, keyHolder ? null : clientIpKey(request.ip ?? request.socket.remoteAddress ?? ''));
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
    return limit;
  }

  /**
   * Takes `bytes` of the process's budget and, for a caller without a valid key (`client` given), of the anonymous
   * half and of that client's share; all or none. The function gives them back.
   */
  private reserve(bytes: number, client: string | null): (() => void) | null {
    const budgets = [this.inFlight];
    if (client !== null) {
      let ofClient = this.anonymousOfClient.get(client);
      if (!ofClient) this.anonymousOfClient.set(client, (ofClient = new ByteBudget(this.anonymousPerClient)));
      budgets.push(this.anonymous, ofClient);
    }
    const releases: (() => void)[] = [];
    for (const budget of budgets) {
      const release = budget.tryAcquire(bytes);
      if (release) releases.push(release);
      else break;
    }
    const releaseAll = () => {
      releases.forEach((release) => release());
      const ofClient = client === null ? undefined : this.anonymousOfClient.get(client);
      if (ofClient?.inUse === 0) this.anonymousOfClient.delete(client!);
    };
    if (releases.length === budgets.length) return releaseAll;
    releaseAll();
    return null;
  }

  /**
   * Counts the body as it arrives and cuts it past `limit`: 413 at once, the rest thrown away, and BODY_CUT emitted
   * for a consumer that was piped the body and will not see its end. The counting
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
      request.emit(BODY_CUT);
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
