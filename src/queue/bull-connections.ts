import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { QueueOptions } from 'bull';
import type { RedisOptions } from 'ioredis';
import { AppConfigService } from '../config/app-config.service';
import { createRedisConnection, RedisConnection } from '../redis/redis-connection';
import { allQueues } from './all-queues';

type BullConnectionType = Parameters<NonNullable<QueueOptions['createClient']>>[0];

/**
 * Bull's connections, made from REDIS_URL like every other (one server, Sentinel or Cluster: a Cluster can
 * only be given to Bull this way). Bull closes only connections it made itself, so these are closed here,
 * after the queues.
 */
@Injectable()
export class BullConnections implements OnApplicationShutdown {
  private readonly open: { type: BullConnectionType; connection: RedisConnection }[] = [];

  constructor(
    private readonly config: AppConfigService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** Bull's createClient; `bullOptions` are Bull's own (no ready check, its reconnection back-off). */
  create(type: BullConnectionType, bullOptions: RedisOptions = {}): RedisConnection {
    const { enableReadyCheck, retryStrategy } = bullOptions;
    const connection = createRedisConnection(this.config.env.REDIS_URL, {
      connectionName: `mailroom:bull:${type}`,
      enableReadyCheck,
      retryStrategy,
      // Bull requires this of the connections that block or subscribe: they wait for as long as it takes.
      ...(type === 'client' ? {} : { maxRetriesPerRequest: null }),
    });
    this.open.push({ type, connection });
    return connection;
  }

  async onApplicationShutdown(): Promise<void> {
    // Closing a queue twice is harmless (Bull keeps the first close): @nestjs/bull closes them too.
    await Promise.all(allQueues(this.moduleRef).map((queue) => queue.close()));
    await Promise.all(this.open.map(({ type, connection }) => closeConnection(type, connection)));
  }
}

async function closeConnection(type: BullConnectionType, connection: RedisConnection): Promise<void> {
  // A blocking connection may be waiting in BRPOPLPUSH, which QUIT would wait for.
  if (type === 'bclient') return connection.disconnect();
  await connection.quit().catch(() => connection.disconnect());
}
