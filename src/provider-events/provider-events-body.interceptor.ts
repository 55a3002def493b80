import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { normalizeEventsBody } from './provider-event-rules';
import { parseProviderEventsBody } from './raw-body';

/**
 * Runs after the signature guard and before validation: parses the signed bytes (only now: an unsigned caller's
 * body is never parsed), and one event, an array, or `{events}` become `{events}`.
 */
@Injectable()
export class ProviderEventsBodyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    request.body = normalizeEventsBody(parseProviderEventsBody(request));
    return next.handle();
  }
}
