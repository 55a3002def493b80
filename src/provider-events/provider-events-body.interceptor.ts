import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { normalizeEventsBody } from './provider-event-rules';

/** Runs after the signature guard and before validation: one event, an array, or `{events}` become `{events}`. */
@Injectable()
export class ProviderEventsBodyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    request.body = normalizeEventsBody(request.body);
    return next.handle();
  }
}
