import { Module } from '@nestjs/common';
import { AccountsController } from './accounts.controller';
import { AccountsModule } from './accounts.module';
import { MetricsController } from './metrics.controller';
import { OperatorAccess } from './operator-access';

/**
 * The operator's surfaces: /admin/accounts (an @Auth route of the API), and the pages outside the API that
 * OperatorAccess guards: /metrics here, Bull Board (app.setup.ts) and a worker's probe port (health/probe-server.ts).
 */
@Module({
  imports: [AccountsModule],
  controllers: [MetricsController, AccountsController],
  providers: [OperatorAccess],
  exports: [OperatorAccess],
})
export class OperatorModule {}
