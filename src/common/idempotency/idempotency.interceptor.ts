import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { from, Observable, of } from 'rxjs';
import { catchError, mergeMap } from 'rxjs/operators';
import { RedisService } from '../../redis/redis.service';
import { withRedisTimeout } from '../../redis/redis-timeout';
import { AppException } from '../errors/app.exception';
import { ErrorCode } from '../errors/error-code';
import { sha256Hex } from '../crypto/sha256';
import { idempotencyClaimOf } from './idempotency-claim';
import { IDEMPOTENCY_TTL_MS, IdempotencyClaim, IdempotencyStore, IdempotentReplay, StoredAnswer } from './idempotency.store';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** A claim whose request never finished (the process died) frees the key after this long, not after 24 h. */
const PENDING_TTL_MS = 60_000;
const MAX_KEY_LENGTH = 255;
/** Redis is the fast path only: a slow or absent Redis is skipped, PostgreSQL still keeps the answer. */
const REDIS_TIMEOUT_MS = 300;

type CachedEntry = { state: 'pending'; hash: string } | ({ state: 'done'; hash: string } & Omit<StoredAnswer, 'requestHash'>);

/**
 * The D-17 mechanism behind @Idempotent(). The answer is kept in PostgreSQL (IdempotencyStore), written by
 * the route in the same transaction as its effect, so a committed effect always has its answer. Redis holds a
 * copy and the in-flight claim (SET NX), so that a concurrent duplicate gets 409 and a replay costs no query.
 * A key Redis has no answer for is looked up in PostgreSQL before the route runs (one indexed query, only for
 * requests that carry a key). Without Redis the route still runs: its effect and the record commit together
 * or not at all, and a duplicate that races it fails on the record's key and is answered from the record.
 *
 * Every @Idempotent() route has an effect and writes its record with it (IdempotencyStore.guard, then
 * `claim.recorded = true`): POST /email/send, /api/email/send, /v1/send (a list send too), POST /email/batch,
 * the form posts (/v1/{domain}/send, /submit/{form}, /f/{formId}, /f/{collection}/{form}, /c/{collection}/{form},
 * /{domain}/{form}) and POST /api/billing/usage. The record `remember` saves after the handler is for a route
 * without an effect only: replaying its answer is all the key promises there.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger(IdempotencyInterceptor.name);

  constructor(
    private readonly redis: RedisService,
    private readonly store: IdempotencyStore,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const header = request.headers[IDEMPOTENCY_HEADER];
    const idempotencyKey = Array.isArray(header) ? header[0] : header;
    if (idempotencyKey === undefined) return next.handle();
    if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_KEY_LENGTH) {
      throw AppException.invalidField('Idempotency-Key', `must be 1 to ${MAX_KEY_LENGTH} characters`);
    }

    const claim = idempotencyClaimOf(
      { method: request.method, path: request.path, body: request.body, keyId: request.auth?.keyId, ip: request.ip },
      idempotencyKey,
    );
    const redisKey = this.redis.key('idempotency', claim.scope, sha256Hex(claim.route), claim.keyHash);

    const cached = await this.claimInRedis(redisKey, claim);
    if (cached?.state === 'done')
      return of(this.replay({ requestHash: cached.hash, statusCode: cached.statusCode, body: cached.body }, claim, response));
    // Redis does not have the answer: it restarted or evicted it, it is away, or the request that claimed the key
    // finished without Redis hearing. The record, committed with the effect, says whether there was one.
    const stored = await this.store.find(claim);
    if (stored) {
      await this.cache(redisKey, doneEntry(stored));
      return of(this.replay(stored, claim, response));
    }
    if (cached?.state === 'pending') {
      throw new AppException(ErrorCode.IdempotencyConflict, 'A request with this Idempotency-Key is still being processed');
    }

    request.idempotency = claim;
    return next.handle().pipe(
      mergeMap((body: unknown) => from(this.remember(redisKey, claim, response.statusCode, body).then(() => body))),
      catchError((err: unknown) => {
        if (err instanceof IdempotentReplay) {
          return from(this.cache(redisKey, doneEntry(err.stored)).then(() => this.replay(err.stored, claim, response)));
        }
        return from(
          this.redisCall(() => this.redis.client.del(redisKey)).then(() => {
            throw err;
          }),
        );
      }),
    );
  }

  /** Claims the key in Redis; the entry already there if another request has it; null when claimed or Redis is unavailable. */
  private async claimInRedis(redisKey: string, claim: IdempotencyClaim): Promise<CachedEntry | null> {
    const pending: CachedEntry = { state: 'pending', hash: claim.requestHash };
    const claimed = await this.redisCall(() => this.redis.client.set(redisKey, JSON.stringify(pending), 'PX', PENDING_TTL_MS, 'NX'));
    if (claimed !== null) return null;
    const stored = await this.redisCall(() => this.redis.client.get(redisKey));
    // Claimed ('OK'), Redis unavailable (undefined), or the first request failed and released the key meanwhile.
    return stored ? (JSON.parse(stored) as CachedEntry) : null;
  }

  /**
   * After the route succeeded: the record is in PostgreSQL already when the route wrote it with its rows;
   * otherwise it is written here. Neither write may fail the answer: the effect has happened.
   */
  private async remember(redisKey: string, claim: IdempotencyClaim, statusCode: number, body: unknown): Promise<void> {
    if (!claim.recorded) {
      try {
        await this.store.save({ claim, statusCode, body });
      } catch (err) {
        this.logger.warn(`Could not keep the idempotent answer in PostgreSQL: ${(err as Error).message}`);
      }
    }
    await this.cache(redisKey, { state: 'done', hash: claim.requestHash, statusCode, body });
  }

  private async cache(redisKey: string, entry: CachedEntry): Promise<void> {
    await this.redisCall(() => this.redis.client.set(redisKey, JSON.stringify(entry), 'PX', IDEMPOTENCY_TTL_MS));
  }

  /** A Redis call that never throws and never waits long: undefined when Redis did not answer. */
  private async redisCall<T>(call: () => Promise<T>): Promise<T | undefined> {
    if (this.redis.client.status !== 'ready') return undefined;
    try {
      return await withRedisTimeout(call(), REDIS_TIMEOUT_MS);
    } catch {
      return undefined;
    }
  }

  private replay(stored: StoredAnswer, claim: IdempotencyClaim, response: Response): unknown {
    if (stored.requestHash !== claim.requestHash) {
      throw new AppException(ErrorCode.IdempotencyConflict, 'This Idempotency-Key was already used with a different request body');
    }
    response.status(stored.statusCode).setHeader(REPLAYED_HEADER, 'true');
    return stored.body;
  }
}

function doneEntry(stored: StoredAnswer): CachedEntry {
  return { state: 'done', hash: stored.requestHash, statusCode: stored.statusCode, body: stored.body };
}
