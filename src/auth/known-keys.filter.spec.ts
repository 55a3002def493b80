import { randomBytes } from 'node:crypto';
import { hashKey } from './key-format';
import { FILTER_BITS, filterBits } from './known-keys.filter';

describe('known-keys filter bits', () => {
  it('are six, taken from the hash, within the filter and never on the completeness bit 0', () => {
    for (let i = 0; i < 1000; i++) {
      const bits = filterBits(hashKey(`svc_sk_usage_${randomBytes(32).toString('hex')}`));
      expect(bits).toHaveLength(6);
      for (const bit of bits) {
        expect(Number.isInteger(bit)).toBe(true);
        expect(bit).toBeGreaterThanOrEqual(1);
        expect(bit).toBeLessThan(FILTER_BITS);
      }
    }
    expect(filterBits('f'.repeat(64))).toEqual(Array(6).fill(1));
    expect(filterBits('000001'.repeat(10) + '0000')).toEqual(Array(6).fill(2));
  });

  it('are the same for the same hash and differ between hashes', () => {
    const hash = hashKey('svc_sk_admin_' + 'a'.repeat(64));
    expect(filterBits(hash)).toEqual(filterBits(hash));
    expect(filterBits(hash)).not.toEqual(filterBits(hashKey('svc_sk_admin_' + 'b'.repeat(64))));
  });
});
