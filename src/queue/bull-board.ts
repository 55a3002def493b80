import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { getQueueToken } from '@nestjs/bull';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Queue } from 'bull';
import type { NextFunction, Request, Response } from 'express';
import { ApiKeyCache } from '../api-keys/api-key.cache';
import { ErrorCode } from '../common/errors/error-code';
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
  const keys = app.get(ApiKeyCache);
  app.use(BULL_BOARD_PATH, operatorBasicAuth(keys, app.get(AppConfigService)), adapter.getRouter());
}

function operatorBasicAuth(keys: ApiKeyCache, config: AppConfigService) {
  return async (request: Request, response: Response, next: NextFunction) => {
    const match = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    const password = match ? Buffer.from(match[1], 'base64').toString('utf8').split(':').slice(1).join(':') : '';
    const key = password ? await keys.resolve(password).catch(() => null) : null;
    const allowed =
      key !== null && key.keyType === 'admin' && key.isOperator && (key.expiresAt === null || key.expiresAt > Date.now());
    if (allowed) return next();
    response
      .status(401)
      .set('WWW-Authenticate', 'Basic realm="Mailroom queues", charset="UTF-8"')
      .json({
        error: { code: ErrorCode.AuthMissing, message: 'Sign in with any user name and an operator admin key as the password' },
        documentation: `${config.publicUrl}/docs#errors`,
      });
  };
}
