import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { IdempotencyInterceptor } from './idempotency.interceptor';

/**
 * Honours an `Idempotency-Key` header on this route (D-17): the first response is kept 24 h per account
 * (or per client IP without a credential); the same key with the same body replays it with
 * `Idempotent-Replayed: true`; with another body, or while the first request is still running, → 409.
 */
export function Idempotent(): MethodDecorator {
  return applyDecorators(
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description: 'Any unique string (≤ 255 characters). Retrying with the same key and body returns the first response instead of acting twice.',
    }),
  );
}
