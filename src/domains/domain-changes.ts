import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Invalidatable } from '../common/invalidated-cache';
import { RedisService } from '../redis/redis.service';

/** A domain that was verified, failed, added verified or deleted; `name` null: any domain of the account. */
export interface DomainChange {
  accountId: string;
  name: string | null;
}

/**
 * Told of every change on any instance; `null` when changes may have been missed (the subscriber reconnected), so
 * everything cached about domains is to be dropped. Runs on Redis's message handler: it must not throw or wait.
 */
export type DomainChangeListener = (change: DomainChange | null) => void;

const CHANNEL = 'domains:changed';

/**
 * Which domains are verified is cached above this folder (forms' origin policy and sender, the send API, DKIM keys
 * on workers). Those caches register here; DomainsService reports each change, which reaches the listeners of
 * this instance at once and those of every other instance over Redis pub/sub, as key deletions do (ApiKeyCache).
 */
@Injectable()
export class DomainChanges implements OnModuleInit {
  private readonly logger = new Logger(DomainChanges.name);
  private readonly listeners: DomainChangeListener[] = [];

  constructor(private readonly redis: RedisService) {}

  async onModuleInit(): Promise<void> {
    await this.redis.subscribe(
      CHANNEL,
      (message) => this.tell(parseChange(message)),
      () => this.tell(null),
    );
  }

  register(listener: DomainChangeListener): void {
    this.listeners.push(listener);
  }

  /**
   * Drops from `cache` what each change makes stale: the entry `keyOf` names (by default the account's), everything
   * when it names none or when changes may have been missed.
   */
  invalidates(cache: Invalidatable<string>, keyOf: (change: DomainChange) => string | null = (change) => change.accountId): void {
    this.register((change) => {
      const key = change && keyOf(change);
      if (key === null) cache.clear();
      else cache.invalidate(key);
    });
  }

  /** Tells this instance's listeners now and the other instances' through Redis (best effort: their caches expire anyway). */
  async changed(accountId: string, name: string | null): Promise<void> {
    const change: DomainChange = { accountId, name };
    this.tell(change);
    try {
      await this.redis.publish(CHANNEL, JSON.stringify(change));
    } catch (err) {
      this.logger.warn(`Could not tell other instances that a domain of ${accountId} changed: ${(err as Error).message}`);
    }
  }

  private tell(change: DomainChange | null): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.logger.warn(`A domain change listener failed: ${(err as Error).message}`);
      }
    }
  }
}

/** A published change; anything else (a message of another version) is taken as "anything may have changed". */
export function parseChange(message: string): DomainChange | null {
  try {
    const value: unknown = JSON.parse(message);
    if (value && typeof value === 'object') {
      const { accountId, name } = value as Record<string, unknown>;
      if (typeof accountId === 'string' && (typeof name === 'string' || name === null)) return { accountId, name };
    }
  } catch {
    // fall through
  }
  return null;
}
