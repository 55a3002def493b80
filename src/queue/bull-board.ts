import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { getQueueToken } from '@nestjs/bull';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Queue } from 'bull';
import type { NextFunction, Request, Response } from 'express';
import { ErrorCode } from '../common/errors/error-code';
import { RateLimitService } from '../common/rate-limit/rate-limit.service';
import { AppConfigService } from '../config/app-config.service';
import { QueueName } from './queue.constants';

export const BULL_BOARD_PATH = '/admin/queues';

/** Bull Board at /admin/queues, behind HTTP basic auth whose password is an operator admin key (D-34). */
export function setupBullBoard(app: NestExpressApplication): void {
  const adapter = new ExpressAdapter();
  adapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: Object.values(QueueName).map((name) => new BullAdapter(app.get<Queue>(getQueueToken(name)))),
    serverAdapter: adapter,
  });
  app.use(BULL_BOARD_PATH, operatorBasicAuth(app.get(RateLimitService), app.get(AppConfigService)), adapter.getRouter());
}

/**
 * A wrong password counts against the client IP's failed-authentication budget (429 once used up); a
 * malformed one costs no database lookup. The board polls, so signed-in requests are not counted.
 */
function operatorBasicAuth(limiter: RateLimitService, config: AppConfigService) {
  return async (request: Request, response: Response, next: NextFunction) => {
    try {
      const match = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
      const password = match ? Buffer.from(match[1], 'base64').toString('utf8').split(':').slice(1).join(':') : '';
      const key = password ? await limiter.resolveCredential(request, password, response) : undefined;
      if (key === null) await limiter.countAuthFailure(request, response);
      const allowed = key != null && key.keyType === 'admin' && key.isOperator && (key.expiresAt === null || key.expiresAt > Date.now());
      if (allowed) return next();
      response
        .status(401)
        .set('WWW-Authenticate', 'Basic realm="Mailroom queues", charset="UTF-8"')
        .json({
          error: { code: ErrorCode.AuthMissing, message: 'Sign in with any user name and an operator admin key as the password' },
          documentation: `${config.publicUrl}/docs#errors`,
        });
    } catch (err) {
      next(err);
    }
  };
}
