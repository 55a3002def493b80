import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Request } from 'express';
import { OperatorAccess } from './operator-access';
import type { Permission } from '../auth/permissions';
import { allQueues } from '../queue/all-queues';

export const BULL_BOARD_PATH = '/admin/queues';

const READS = new Set(['GET', 'HEAD']);

/**
 * What a request to Bull Board needs: operator.queues to look, and operator.queues.manage as well for every
 * other method. Bull Board changes jobs and queues (retry, promote, clean, pause, add, obliterate…) only by
 * PUT, POST and PATCH calls to its API, so the method decides whatever routes a later version adds.
 */
export function bullBoardPermissions(request: Pick<Request, 'method'>): readonly Permission[] {
  return READS.has(request.method.toUpperCase()) ? ['operator.queues'] : ['operator.queues', 'operator.queues.manage'];
}

/** Bull Board at /admin/queues for admin keys of the operator account, by HTTP basic auth (D-34). */
export function setupBullBoard(app: NestExpressApplication): void {
  const adapter = new ExpressAdapter();
  adapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: allQueues(app).map((queue) => new BullAdapter(queue)),
    serverAdapter: adapter,
  });
  const access = app.get(OperatorAccess).middleware({ realm: 'Mailroom queues', permissions: bullBoardPermissions });
  app.use(BULL_BOARD_PATH, access, adapter.getRouter());
}
