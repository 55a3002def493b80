import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { AuthContext } from './auth-context';

/** The caller's AuthContext; undefined only on routes that let anonymous calls through. */
export const CurrentAuth = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): AuthContext | undefined => ctx.switchToHttp().getRequest<Request>().auth,
);
