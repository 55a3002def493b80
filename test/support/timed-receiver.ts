import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TimedRequest {
  path: string;
  /** The `webhook-id` header. */
  webhookId: string;
  /** performance.now() when the request's headers arrived. */
  arrivedAt: number;
  /** performance.now() when its answer was sent or its connection closed; undefined while in progress. */
  endedAt?: number;
}

/** How a path answers: after `delayMs` (0 unless set), with `status` (200) and `headers`; `hang`: never. */
export interface Behaviour {
  status?: number;
  delayMs?: number;
  headers?: Record<string, string>;
  hang?: boolean;
}

/**
 * A real HTTP endpoint that notes when each webhook request arrived and how many were in progress at once (per
 * path), answering each path as told: at once, slowly, never, or with a status and headers.
 */
export interface TimedReceiver {
  /** `http://127.0.0.1:<port>`: register `${base}/<any path>`. */
  readonly base: string;
  readonly requests: TimedRequest[];
  at(path: string): TimedRequest[];
  /** The most requests to `path` that were in progress at the same time. */
  maxInFlight(path: string): number;
  behave(path: string, behaviour: Behaviour): void;
  /** Answers the requests to `path` left hanging with `status` (200), and from now on answers it at once with 200. */
  release(path: string, status?: number): void;
  /** Drops the connections of unanswered requests, then stops listening. */
  close(): Promise<void>;
}

export async function startTimedReceiver(): Promise<TimedReceiver> {
  const requests: TimedRequest[] = [];
  const behaviours = new Map<string, Behaviour>();
  const inFlight = new Map<string, number>();
  const maxima = new Map<string, number>();
  const hanging = new Map<string, ((status: number) => void)[]>();
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    const request: TimedRequest = { path, webhookId: String(req.headers['webhook-id'] ?? ''), arrivedAt: performance.now() };
    requests.push(request);
    const now = (inFlight.get(path) ?? 0) + 1;
    inFlight.set(path, now);
    maxima.set(path, Math.max(maxima.get(path) ?? 0, now));
    res.on('close', () => {
      request.endedAt = performance.now();
      inFlight.set(path, (inFlight.get(path) ?? 1) - 1);
    });
    req.resume();
    req.on('end', () => {
      const behaviour = behaviours.get(path) ?? {};
      const answer = () => {
        if (!res.destroyed) res.writeHead(behaviour.status ?? 200, behaviour.headers ?? {}).end('ok');
      };
      if (behaviour.hang) {
        hanging.set(path, [...(hanging.get(path) ?? []), (status) => !res.destroyed && res.writeHead(status).end('ok')]);
        return;
      }
      if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    at: (path) => requests.filter((r) => r.path === path),
    maxInFlight: (path) => maxima.get(path) ?? 0,
    behave: (path, behaviour) => behaviours.set(path, behaviour),
    release: (path, status = 200) => {
      behaviours.delete(path);
      for (const answer of hanging.get(path) ?? []) answer(status);
      hanging.delete(path);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
