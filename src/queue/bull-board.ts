import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { OperatorAccess } from '../common/auth/operator-access';
import { allQueues } from './all-queues';

export const BULL_BOARD_PATH = '/admin/queues';

/** Bull Board at /admin/queues, behind HTTP basic auth whose password is an operator admin key (D-34). */
export function setupBullBoard(app: NestExpressApplication): void {
  const adapter = new ExpressAdapter();
  adapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: allQueues(app).map((queue) => new BullAdapter(queue)),
    serverAdapter: adapter,
  });
  app.use(BULL_BOARD_PATH, app.get(OperatorAccess).middleware('Mailroom queues'), adapter.getRouter());
}
