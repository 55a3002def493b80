/**
 * Who a limit counts: the scopes of the spec ("api-key", "ip", "endpoint") plus the account's plan, and the inbound
 * SMTP server's mail from one sender to a domain and to a domain in all.
 */
export type LimitScope = 'api-key' | 'account' | 'endpoint' | 'ip' | 'smtp-sender' | 'smtp-domain';

/** hour and minute are sliding windows; burst is a token bucket. */
export type LimitWindow = 'hour' | 'minute' | 'burst';

export const HOUR_MS = 3_600_000;
export const MINUTE_MS = 60_000;

/** One limit a request falls under, with the Redis key of its counter. */
export type LimitRule = (
  | { window: 'hour' | 'minute'; kind: 'window'; limit: number; windowMs: number }
  | { window: 'burst'; kind: 'bucket'; limit: number; refillPerMinute: number }
) & {
  scope: LimitScope;
  key: string;
  /** For endpoint limits: the route pattern they count. */
  endpoint?: string;
};

/** A rule's state after the request: what the headers and the status routes report. */
export interface LimitState {
  rule: LimitRule;
  remaining: number;
  /** When the full limit is available again (ms since the epoch). */
  resetAtMs: number;
  /** 0 when the rule lets the request through; else how long until it would (ms). */
  retryAfterMs: number;
}

/**
 * What deciding does to the counters: `if-allowed` moves every one by the cost only when every rule allows it (a
 * request); `never` only reads (would one of this cost pass?); `always` moves them whatever the decision (an event
 * that has happened, counted after the fact).
 */
export type CountMode = 'if-allowed' | 'never' | 'always';

export interface LimitDecision {
  allowed: boolean;
  states: LimitState[];
}
