import { ExpiringMap } from './expiring-map';

/** What a cache that others invalidate (DomainChanges) needs to offer them. */
export interface Invalidatable<K> {
  invalidate(key: K): void;
  clear(): void;
}

/** A load in flight: made stale by an invalidation of its key that arrives before it finishes. */
interface PendingLoad {
  stale: boolean;
}

/**
 * An expiring cache filled by loaders and emptied by invalidations, where an invalidation also wins over a load
 * already in flight: that load read before the change, so its value is answered to its caller but not kept.
 * Without this, a lookup started just before a domain is deleted stores the old list after the deletion was
 * announced, and it is served until it expires.
 */
export class InvalidatedCache<K, V> implements Invalidatable<K> {
  private readonly entries: ExpiringMap<K, V>;
  private readonly pending = new Map<K, Set<PendingLoad>>();

  constructor(ttlMs: number, maxEntries?: number) {
    this.entries = new ExpiringMap<K, V>(ttlMs, maxEntries);
  }

  /** The cached value, else `loader`'s, kept when `keep` says so and no invalidation of `key` came meanwhile. */
  async load(key: K, loader: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    const cached = this.entries.get(key);
    if (cached !== undefined) return cached;
    const load: PendingLoad = { stale: false };
    const loads = this.pending.get(key) ?? new Set<PendingLoad>();
    loads.add(load);
    this.pending.set(key, loads);
    try {
      const value = await loader();
      if (!load.stale && keep(value)) this.entries.set(key, value);
      return value;
    } finally {
      loads.delete(load);
      if (loads.size === 0 && this.pending.get(key) === loads) this.pending.delete(key);
    }
  }

  invalidate(key: K): void {
    this.entries.delete(key);
    for (const load of this.pending.get(key) ?? []) load.stale = true;
  }

  clear(): void {
    this.entries.clear();
    for (const loads of this.pending.values()) for (const load of loads) load.stale = true;
  }
}
