/** Requests one webhook endpoint gets at once, unless its webhook says otherwise. */
export const DEFAULT_MAX_CONCURRENCY = 4;
export const MAX_MAX_CONCURRENCY = 100;
export const MAX_RATE_LIMIT_PER_SECOND = 1000;

/** What one endpoint (one webhook) may be sent at once and per second, from its webhook's settings. */
export interface EndpointLimits {
  maxConcurrency: number;
  /** Request starts in any one-second window; null: no limit. */
  rateLimitPerSecond: number | null;
}
