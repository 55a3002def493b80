import { createHash } from 'node:crypto';
import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { from, Observable, of } from 'rxjs';
import { catchError, mergeMap } from 'rxjs/operators';
import { RedisService } from '../../redis/redis.service';
import { AppException } from '../errors/app.exception';
import { ErrorCode } from '../errors/error-code';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
const TTL_MS = 24 * 3600 * 1000;
/** A claim whose request never finished (the process died) frees the key after this long, not after 24 h. */
const PENDING_TTL_MS = 60_000;
const MAX_KEY_LENGTH = 255;

type StoredEntry = { state: 'pending'; hash: string } | { state: 'done'; hash: string; status: number; body: unknown };

/**
 * The D-17 mechanism behind @Idempotent(). One Redis key per (account or anonymous IP, Idempotency-Key):
 * claimed with SET NX before the handler runs, so a concurrent duplicate sees the claim and gets 409; filled
 * with the response when the handler succeeds; released when it fails, so the client may retry.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly redis: RedisService) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const header = request.headers[IDEMPOTENCY_HEADER];
    const idempotencyKey = Array.isArray(header) ? header[0] : header;
    if (idempotencyKey === undefined) return next.handle();
    if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_KEY_LENGTH) {
      throw AppException.invalidField('Idempotency-Key', `must be 1 to ${MAX_KEY_LENGTH} characters`);
    }

    const scope = request.auth?.accountId ?? `ip:${request.ip}`;
    const redisKey = this.redis.key('idempotency', scope, sha256(idempotencyKey));
    const hash = sha256(`${request.method} ${request.path}\n${JSON.stringify(request.body ?? null)}`);

    const pending: StoredEntry = { state: 'pending', hash };
    const claimed = await this.redis.client.set(redisKey, JSON.stringify(pending), 'PX', PENDING_TTL_MS, 'NX');
    if (claimed !== 'OK') {
      const stored = await this.redis.client.get(redisKey);
      // Gone between SET and GET: the first request failed and released it; this one may act.
      if (stored === null) return this.intercept(context, next);
      return of(this.replay(JSON.parse(stored) as StoredEntry, hash, response));
    }

    return next.handle().pipe(
      mergeMap((body) => {
        const done: StoredEntry = { state: 'done', hash, status: response.statusCode, body };
        return from(this.redis.client.set(redisKey, JSON.stringify(done), 'PX', TTL_MS).then(() => body));
      }),
      catchError((err) =>
        from(
          this.redis.client
            .del(redisKey)
            .catch(() => 0)
            .then(() => {
              throw err;
            }),
        ),
      ),
    );
  }

  private replay(stored: StoredEntry, hash: string, response: Response): unknown {
    if (stored.hash !== hash) {
      throw new AppException(ErrorCode.IdempotencyConflict, 'This Idempotency-Key was already used with a different request body');
    }
    if (stored.state === 'pending') {
      throw new AppException(ErrorCode.IdempotencyConflict, 'A request with this Idempotency-Key is still being processed');
    }
    response.status(stored.status).setHeader(REPLAYED_HEADER, 'true');
    return stored.body;
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
