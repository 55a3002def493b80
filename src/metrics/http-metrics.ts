import type { NextFunction, Request, Response } from 'express';
import { httpRequestDuration } from './metrics';

/** Paths served by Express middleware rather than Nest routes, labelled by their mount point. */
const MOUNTED = ['/admin/queues', '/docs'];

/** Times every request into mailroom_http_request_duration_seconds, labelled by route pattern, never by raw path. */
export function httpMetrics(request: Request, response: Response, next: NextFunction): void {
  const end = httpRequestDuration.startTimer();
  response.once('finish', () => {
    end({ method: request.method, route: routeOf(request), status: String(response.statusCode) });
  });
  next();
}

function routeOf(request: Request): string {
  const pattern = (request.route as { path?: unknown } | undefined)?.path;
  if (typeof pattern === 'string') return pattern;
  return MOUNTED.find((prefix) => request.path === prefix || request.path.startsWith(`${prefix}/`)) ?? 'unmatched';
}
