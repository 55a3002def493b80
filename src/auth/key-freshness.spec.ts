import {
  cachedUse,
  HIT_TTL_MS,
  MISS_TTL_MS,
  OUTAGE_GRACE_MS,
  REFRESH_AFTER_MS,
  servedThroughOutage,
  servedUntilAfterLookup,
} from './key-freshness';

describe('key freshness', () => {
  const t0 = 1_000_000;
  const found = (loadedAt: number, servedUntil = servedUntilAfterLookup(true, loadedAt)) => ({ found: true, loadedAt, servedUntil });

  it('serves a found key for 800 ms after its lookup began, looking it up again in the background from 400 ms', () => {
    const entry = found(t0);
    expect(cachedUse(entry, t0)).toBe('serve');
    expect(cachedUse(entry, t0 + REFRESH_AFTER_MS - 1)).toBe('serve');
    expect(cachedUse(entry, t0 + REFRESH_AFTER_MS)).toBe('serve-and-refresh');
    expect(cachedUse(entry, t0 + HIT_TTL_MS - 1)).toBe('serve-and-refresh');
    expect(cachedUse(entry, t0 + HIT_TTL_MS)).toBe('look-up');
  });

  it('serves a miss for 5 s, without background lookups', () => {
    const miss = { found: false, loadedAt: t0, servedUntil: servedUntilAfterLookup(false, t0) };
    expect(cachedUse(miss, t0 + MISS_TTL_MS - 1)).toBe('serve');
    expect(cachedUse(miss, t0 + MISS_TTL_MS)).toBe('look-up');
  });

  describe('through an outage', () => {
    it('serves the last good copy for another 800 ms after each failed lookup, trying again in the background', () => {
      const failedAt = t0 + 60_000;
      const servedUntil = servedThroughOutage(t0, failedAt);
      expect(servedUntil).toBe(failedAt + HIT_TTL_MS);
      const entry = found(t0, servedUntil!);
      expect(cachedUse(entry, failedAt + 1)).toBe('serve');
      expect(cachedUse(entry, failedAt + REFRESH_AFTER_MS)).toBe('serve-and-refresh');
      expect(cachedUse(entry, failedAt + HIT_TTL_MS)).toBe('look-up');
    });

    it('never past 5 minutes after the copy’s lookup began', () => {
      expect(servedThroughOutage(t0, t0 + OUTAGE_GRACE_MS - 300)).toBe(t0 + OUTAGE_GRACE_MS);
      expect(servedThroughOutage(t0, t0 + OUTAGE_GRACE_MS - 1)).toBe(t0 + OUTAGE_GRACE_MS);
      expect(servedThroughOutage(t0, t0 + OUTAGE_GRACE_MS)).toBeNull();
      expect(servedThroughOutage(t0, t0 + OUTAGE_GRACE_MS + 60_000)).toBeNull();
      const last = found(t0, servedThroughOutage(t0, t0 + OUTAGE_GRACE_MS - 300)!);
      expect(cachedUse(last, t0 + OUTAGE_GRACE_MS - 1)).not.toBe('look-up');
      expect(cachedUse(last, t0 + OUTAGE_GRACE_MS)).toBe('look-up');
    });
  });
});
