import { randomBytes } from 'node:crypto';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { RedisOptions } from 'ioredis';
import { AppConfigService } from '../config/app-config.service';
import { createRedisConnection, RedisConnection } from './redis-connection';
import { RedisTimeoutError, withRedisTimeout } from './redis-timeout';

type MessageHandler = (message: string) => void;

/** What `RedisService.claim` found: the key is this caller's now, another's, or Redis could not tell. */
export type Claim = { state: 'claimed'; release: () => Promise<void> } | { state: 'taken' } | { state: 'unknown'; reason: string };

/** Deletes a lock only if it still holds the taker's token (it may have expired and been taken by another). */
const RELEASE_LOCK_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * The shared Redis connections: `client` for commands, one lazily made subscriber for pub/sub.
 * Every key and channel goes through key()/channel() so deployments and test runs can share one Redis.
 */
@Injectable()
export class RedisService implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisService.name);
  readonly client: RedisConnection;
  private subscriber?: RedisConnection;
  private readonly handlers = new Map<string, MessageHandler[]>();
  private readonly reconnectListeners: (() => void)[] = [];

  constructor(private readonly config: AppConfigService) {
    this.client = this.connect('commands');
  }

  /** A new connection with Mailroom's options (Bull and the subscriber make their own). */
  connect(name: string, options: RedisOptions = {}): RedisConnection {
    const connection = createRedisConnection(this.config.env.REDIS_URL, {
      connectionName: `mailroom:${name}`,
      // Fail a command after one reconnect attempt instead of queueing it forever: callers answer 503.
      maxRetriesPerRequest: 1,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
      ...options,
    });
    connection.on('error', (err: Error) => this.logger.warn(`Redis (${name}): ${err.message}`));
    return connection;
  }

  key(...parts: (string | number)[]): string {
    return this.config.redisKeyPrefix + parts.join(':');
  }

  /**
   * Runs `task` if this instance takes the lock `key` (held at most `ttlMs`, released after), so that one
   * instance at a time does it; resolves null without running it when another holds the lock.
   */
  async withLock<T>(key: string, ttlMs: number, task: () => Promise<T>): Promise<T | null> {
    const token = randomBytes(8).toString('hex');
    if ((await this.client.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') return null;
    try {
      return await task();
    } finally {
      await this.release(key, token).catch(() => undefined);
    }
  }

  /**
   * Takes `key` for `ttlMs` unless someone holds it, waiting at most `timeoutMs` for Redis: for checks that go on
   * without Redis rather than wait for it (a replayed challenge, a repeated acknowledgment). `release` gives the
   * key back if it is still this claim's.
   */
  async claim(key: string, ttlMs: number, timeoutMs: number): Promise<Claim> {
    const token = randomBytes(8).toString('hex');
    try {
      const answer = await withRedisTimeout(this.client.set(key, token, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX'), timeoutMs);
      if (answer === null) return { state: 'taken' };
      return { state: 'claimed', release: () => this.release(key, token) };
    } catch (err) {
      return { state: 'unknown', reason: err instanceof RedisTimeoutError ? 'Redis did not answer' : (err as Error).message };
    }
  }

  private async release(key: string, token: string): Promise<void> {
    await this.client.eval(RELEASE_LOCK_SCRIPT, 1, key, token);
  }

  channel(name: string): string {
    return `${this.config.redisKeyPrefix}channel:${name}`;
  }

  async publish(name: string, message: string): Promise<void> {
    await this.client.publish(this.channel(name), message);
  }

  /**
   * Calls handler for every message published on the channel, by any instance, and onReconnect each time
   * the subscriber connection came back (messages published while it was away are lost).
   */
  async subscribe(name: string, handler: MessageHandler, onReconnect?: () => void): Promise<void> {
    const channel = this.channel(name);
    if (!this.subscriber) {
      this.subscriber = this.connect('subscriber', { maxRetriesPerRequest: null });
      this.subscriber.on('message', (ch: string, message: string) => {
        for (const h of this.handlers.get(ch) ?? []) h(message);
      });
      let connectedBefore = false;
      this.subscriber.on('ready', () => {
        if (connectedBefore) for (const listener of this.reconnectListeners) listener();
        connectedBefore = true;
      });
    }
    if (onReconnect) this.reconnectListeners.push(onReconnect);
    const existing = this.handlers.get(channel);
    if (existing) existing.push(handler);
    else {
      this.handlers.set(channel, [handler]);
      await this.subscriber.subscribe(channel);
    }
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.client.quit(), this.subscriber?.quit()]);
  }
}
