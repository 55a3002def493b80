import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { getQueueToken } from '@nestjs/bull';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Queue } from 'bull';
import { OperatorAccess } from '../common/auth/operator-access';
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
  app.use(BULL_BOARD_PATH, app.get(OperatorAccess).middleware('Mailroom queues'), adapter.getRouter());
}
