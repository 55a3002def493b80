import Redis, { Cluster, RedisOptions } from 'ioredis';
import { parseRedisUrl } from '../config/redis-url';

/** Every connection Mailroom makes to Redis: to one server (directly or through Sentinel), or to a Cluster. */
export type RedisConnection = Redis | Cluster;

/**
 * The one place connections are made: a Redis (one server, or the master through Sentinel) or a Cluster, with
 * `options` as for a single server. On a Cluster the options that concern the whole client (connecting lazily,
 * queueing while offline, auto-pipelining, the ready check, reconnecting) are the Cluster's; the others are
 * every node connection's.
 */
export function createRedisConnection(url: string, options: RedisOptions = {}): RedisConnection {
  const target = parseRedisUrl(url);
  if (target.mode !== 'cluster') return new Redis({ ...target.options, ...options });
  const { lazyConnect, enableOfflineQueue, enableAutoPipelining, enableReadyCheck, retryStrategy, ...nodeOptions } = options;
  return new Cluster(target.nodes, {
    lazyConnect,
    enableOfflineQueue,
    enableAutoPipelining,
    enableReadyCheck,
    ...(retryStrategy ? { clusterRetryStrategy: retryStrategy } : {}),
    // Bull reads the ready check of its blocking connections from here.
    redisOptions: { ...target.options, ...nodeOptions, ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }) },
  });
}
