import { Cluster } from 'ioredis';
import { createRedisConnection } from './redis-connection';

describe('createRedisConnection', () => {
  it('gives the options that concern the whole client to a Cluster, the others to each node', () => {
    const retryStrategy = (attempt: number) => attempt * 100;
    const cluster = createRedisConnection('redis-cluster://:secret@127.0.0.1:7000,127.0.0.1:7001', {
      lazyConnect: true,
      enableOfflineQueue: false,
      enableReadyCheck: false,
      retryStrategy,
      connectionName: 'mailroom:test',
      maxRetriesPerRequest: null,
      commandTimeout: 500,
    }) as Cluster;
    expect(cluster).toBeInstanceOf(Cluster);
    expect(cluster.status).toBe('wait');
    expect(cluster.options).toMatchObject({
      lazyConnect: true,
      enableOfflineQueue: false,
      enableReadyCheck: false,
      clusterRetryStrategy: retryStrategy,
      redisOptions: {
        password: 'secret',
        connectionName: 'mailroom:test',
        maxRetriesPerRequest: null,
        commandTimeout: 500,
        enableReadyCheck: false,
      },
    });
    expect(cluster.options.redisOptions).not.toHaveProperty('retryStrategy');
    expect(cluster.options.redisOptions).not.toHaveProperty('lazyConnect');
    cluster.disconnect();
  });

  it('makes a Redis that finds its master through the Sentinels', () => {
    const redis = createRedisConnection('redis-sentinel://:pw@127.0.0.1:26379/mymaster/1', {
      lazyConnect: true,
      connectionName: 'mailroom:test',
    });
    expect(redis).not.toBeInstanceOf(Cluster);
    expect(redis.options).toMatchObject({
      sentinels: [{ host: '127.0.0.1', port: 26379 }],
      name: 'mymaster',
      password: 'pw',
      db: 1,
      connectionName: 'mailroom:test',
    });
    redis.disconnect();
  });
});
