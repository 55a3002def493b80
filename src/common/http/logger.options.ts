import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Params } from 'nestjs-pino';
import { AppConfigService } from '../../config/app-config.service';
import { rootLogger } from '../../logging/root-logger';

/** pino-http's serialised request, which its `req` serializer is given. */
interface SerializedRequest {
  id: unknown;
  method: string;
  url: string;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives the request its id (X-Request-Id accepted or made) and echoes it. Registered first of all, so even
 * responses made before Nest's middleware (body-parser errors, rate limits) carry it; pino-http reuses it.
 */
export function requestId(request: Request, response: Response, next: NextFunction): void {
  const given = request.headers['x-request-id'];
  request.id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
  response.setHeader('X-Request-Id', request.id);
  next();
}

/** Structured JSON logs (the thread's root logger), each line with the request's id. */
export function loggerOptions(config: AppConfigService): Params {
  return {
    pinoHttp: {
      logger: rootLogger(config.logSettings),
      genReqId: (request: IncomingMessage & { id?: unknown }, response: ServerResponse) =>
        request.id ?? (response.getHeader('X-Request-Id') as string | undefined) ?? randomUUID(),
      // What a request's lines say about it: no headers. They carry keys, tokens and cookies that a list of names
      // to redact would have to foresee, and pino-http serialises the request for every request, at any level
      // (redacting the headers was 1.5% of the HTTP thread's profile under load, for lines a warn level never wrote).
      serializers: { req: (request: SerializedRequest) => ({ id: request.id, method: request.method, url: request.url }) },
      // A 503 answers an outage (PostgreSQL or Redis away) that is logged once, as an error, where it is
      // detected: each request it refuses is a warning without a stack.
      customLogLevel: (_request, response, error) => {
        if (response.statusCode === 503) return 'warn';
        return error || response.statusCode >= 500 ? 'error' : response.statusCode >= 400 ? 'warn' : 'info';
      },
      customErrorObject: (_request, response, _error, logged: Record<string, unknown>) => {
        if (response.statusCode !== 503) return logged;
        const { err: _stack, ...rest } = logged;
        return rest;
      },
      autoLogging: { ignore: (request) => request.url?.startsWith('/health') ?? false },
    },
  };
}
