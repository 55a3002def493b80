import { applyDecorators, createParamDecorator, ExecutionContext, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import type { Request } from 'express';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import type { IdempotencyClaim } from './idempotency.store';

/**
 * Honours an `Idempotency-Key` header on this route (D-17): the first response is kept 24 h per API key and
 * route (D-36; per client IP and route without a credential); the same key with the same body replays it with
 * `Idempotent-Replayed: true`; with another body, or while the first request is still running, → 409.
 * A route that writes rows passes the claim (@IdempotencyClaimOf()) to its service, which stores the answer in
 * the same statement or transaction as its rows (IdempotencyStore.guard around the write).
 */
export function Idempotent(): MethodDecorator {
  return applyDecorators(
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description:
        'Any unique string (≤ 255 characters). Retrying with the same key and body returns the first response instead of acting twice.',
    }),
  );
}

/** The request's Idempotency-Key claim, when it carries one (set by @Idempotent()'s interceptor). */
export const IdempotencyClaimOf = createParamDecorator(
  (_data: unknown, context: ExecutionContext): IdempotencyClaim | undefined => context.switchToHttp().getRequest<Request>().idempotency,
);
