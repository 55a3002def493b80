import { CountMode, LimitDecision, LimitRule, LimitState } from './rate-limit.types';

const MAX_COUNTERS = 100_000;

type WindowCounter = { kind: 'w'; anchor: number; idx: number; curr: number; prev: number; expiresAt: number };
type BucketCounter = { kind: 'b'; tokens: number; ts: number; expiresAt: number };

/**
 * The limiter's counters in process memory, for when Redis cannot be reached: the same sliding windows and
 * token buckets as the Lua script (rate-limit.script.ts), decided the same way, so the headers and the
 * 429s read alike. Each process counts alone.
 */
export class InProcessCounters {
  private readonly counters = new Map<string, WindowCounter | BucketCounter>();

  get size(): number {
    return this.counters.size;
  }

  clear(): void {
    this.counters.clear();
  }

  consume(rules: readonly LimitRule[], cost: number, now: number, mode: CountMode = 'if-allowed'): LimitDecision {
    const reads = rules.map((rule) => (rule.kind === 'window' ? this.readWindow(rule, now, cost) : this.readBucket(rule, now, cost)));
    const allowed = reads.every((r) => r.ok);
    const take = mode === 'always' || (allowed && mode === 'if-allowed') ? cost : 0;
    return { allowed, states: reads.map((read) => read.finish(take)) };
  }

  private readWindow(rule: LimitRule & { kind: 'window' }, now: number, cost: number) {
    const { limit, windowMs: w } = rule;
    const stored = this.live(rule.key, now) as WindowCounter | undefined;
    const anchor = stored?.anchor ?? now;
    let idx = Math.max(0, Math.floor((now - anchor) / w));
    const storedIdx = stored?.idx ?? idx;
    let curr = stored?.curr ?? 0;
    let prev = stored?.prev ?? 0;
    if (storedIdx > idx) idx = storedIdx;
    else if (storedIdx < idx) {
      prev = storedIdx === idx - 1 ? curr : 0;
      curr = 0;
    }
    const elapsed = Math.min(w, Math.max(0, now - anchor - idx * w));
    const used = (prev * (w - elapsed)) / w + curr;
    const ok = used + cost <= limit;
    const finish = (take: number): LimitState => {
      const newCurr = curr + take;
      const remaining = Math.max(0, Math.floor(limit - (used + take) + 1e-9));
      const resetAt = newCurr > 0 ? anchor + (idx + 2) * w : prev > 0 ? anchor + (idx + 1) * w : now;
      let retry = 0;
      if (!ok) {
        const need = limit - cost;
        if (need < 0) retry = resetAt - now;
        else if (curr <= need && prev > 0) retry = w * (1 - (need - curr) / prev) - elapsed;
        else retry = w - elapsed + w * (1 - need / curr);
      }
      if (take > 0) this.write(rule.key, { kind: 'w', anchor, idx, curr: newCurr, prev, expiresAt: now + 2 * w });
      return state(rule, remaining, resetAt, retry);
    };
    return { ok, finish };
  }

  private readBucket(rule: LimitRule & { kind: 'bucket' }, now: number, cost: number) {
    const capacity = rule.limit;
    const rate = rule.refillPerMinute / 60_000;
    const stored = this.live(rule.key, now) as BucketCounter | undefined;
    let tokens = stored?.tokens ?? capacity;
    const ts = stored?.ts ?? now;
    if (now > ts) tokens = Math.min(capacity, tokens + (now - ts) * rate);
    const ok = tokens >= cost;
    const finish = (take: number): LimitState => {
      const left = tokens - take;
      const remaining = Math.max(0, Math.floor(left + 1e-9));
      const resetAt = now + Math.ceil((capacity - left) / rate);
      const retry = ok ? 0 : (cost - tokens) / rate;
      // Stored with 14 significant digits, as the script's tostring() does, so the two agree to the millisecond.
      const stored = Number(left.toPrecision(14));
      if (take > 0) this.write(rule.key, { kind: 'b', tokens: stored, ts: now, expiresAt: now + Math.ceil(capacity / rate) + 1000 });
      return state(rule, remaining, resetAt, retry);
    };
    return { ok, finish };
  }

  private live(key: string, now: number): WindowCounter | BucketCounter | undefined {
    const counter = this.counters.get(key);
    if (counter && counter.expiresAt <= now) {
      this.counters.delete(key);
      return undefined;
    }
    return counter;
  }

  /** Most recently written last, so the oldest counters go first when the map is full. */
  private write(key: string, counter: WindowCounter | BucketCounter): void {
    this.counters.delete(key);
    if (this.counters.size >= MAX_COUNTERS) this.counters.delete(this.counters.keys().next().value as string);
    this.counters.set(key, counter);
  }
}

function state(rule: LimitRule, remaining: number, resetAt: number, retry: number): LimitState {
  return { rule, remaining, resetAtMs: Math.ceil(resetAt), retryAfterMs: Math.max(0, Math.ceil(retry)) };
}
