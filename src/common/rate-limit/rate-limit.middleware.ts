import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { RateLimitService } from './rate-limit.service';

/**
 * Runs before the auth guard and before routing, so every response carries the headers: 401s (counted
 * by client IP), 403s and 404s of unknown paths included. It resolves the credential from the same cache
 * the guard uses; the guard still decides what the caller may do.
 */
@Injectable()
export class RateLimitMiddleware implements NestMiddleware {
  constructor(private readonly limits: RateLimitService) {}

  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    await this.limits.enforce(request, response);
    next();
  }
}
