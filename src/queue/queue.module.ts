import { BullModule } from '@nestjs/bull';
import { Global, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { BullConnections } from './bull-connections';
import { QueueName } from './queue.constants';

const queues = Object.values(QueueName).map((name) => ({ name }));

/** Bull on Redis: one connection setup and the default job options, for every queue. */
@Global()
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [AppConfigService, BullConnections],
      extraProviders: [BullConnections],
      useFactory: (config: AppConfigService, connections: BullConnections) => ({
        createClient: (type, bullOptions) => connections.create(type, bullOptions),
        // A hash tag on a Cluster ({mailroom}:bull), so that each of Bull's scripts finds its keys in one slot.
        prefix: `${config.redisKeyPrefix}bull`,
        defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 5000 },
        // A job whose worker died (SIGKILL, lost host) goes back to the queue once its lock lapses.
        settings: { lockDuration: config.env.QUEUE_LOCK_MS, stalledInterval: config.env.QUEUE_LOCK_MS },
      }),
    }),
    BullModule.registerQueue(...queues),
  ],
  exports: [BullModule],
})
export class QueueModule {}
