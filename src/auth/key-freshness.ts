/**
 * How long ApiKeyCache may answer from memory, as pure functions of time (milliseconds).
 *
 * A found key is served for at most HIT_TTL_MS after its lookup began, so a deleted key stops within a second
 * (D-8) even when no invalidation reaches this instance. Only when a lookup fails because PostgreSQL cannot be
 * reached is the last good copy served longer, up to OUTAGE_GRACE_MS after that copy's lookup began.
 */
export const HIT_TTL_MS = 800;
/** A key still in use is looked up again in the background from this age on, so requests never wait for it. */
export const REFRESH_AFTER_MS = 400;
export const MISS_TTL_MS = 5_000;
/**
 * Long enough to ride out a PostgreSQL restart or failover, which takes seconds to a couple of minutes; short
 * enough that what an outage hides cannot last: keys cannot be deleted or changed while PostgreSQL is down
 * (those writes need it), and those deleted before were dropped by their invalidation, which needs only Redis.
 */
export const OUTAGE_GRACE_MS = 5 * 60_000;

/** What the cache holds for a key hash. */
export interface CachedLookup {
  found: boolean;
  /** When the lookup that produced it began: its snapshot is at least this old. */
  loadedAt: number;
  /** Answered from memory until then; after, only a lookup can tell. */
  servedUntil: number;
}

/** A lookup that began at `loadedAt` answered: until when its answer is served. */
export function servedUntilAfterLookup(found: boolean, loadedAt: number): number {
  return loadedAt + (found ? HIT_TTL_MS : MISS_TTL_MS);
}

/** What the cache does with what it holds at `now`. */
export function cachedUse(entry: CachedLookup, now: number): 'serve' | 'serve-and-refresh' | 'look-up' {
  if (now >= entry.servedUntil) return 'look-up';
  if (entry.found && now >= entry.servedUntil - (HIT_TTL_MS - REFRESH_AFTER_MS)) return 'serve-and-refresh';
  return 'serve';
}

/**
 * A lookup of a found key failed at `now` because PostgreSQL cannot be reached: until when its last good copy
 * (looked up from `loadedAt`) is served, the next lookup being tried in the background meanwhile; null once the
 * copy is too old to serve.
 */
export function servedThroughOutage(loadedAt: number, now: number): number | null {
  const bound = loadedAt + OUTAGE_GRACE_MS;
  return now < bound ? Math.min(now + HIT_TTL_MS, bound) : null;
}
