import { createHash } from 'node:crypto';
import { domainHash, generateKey, hashKey, keyTypeOf, previewKey } from './key-format';

describe('key format (D-4)', () => {
  it('makes admin and usage keys of the exact shape', () => {
    expect(generateKey('svc', 'admin')).toMatch(/^svc_sk_admin_[0-9a-f]{64}$/);
    expect(generateKey('svc', 'usage')).toMatch(/^svc_sk_usage_[0-9a-f]{64}$/);
  });

  it('puts the first 8 hex of sha256(lower-cased domain) in public keys', () => {
    const expected = createHash('sha256').update('example.com').digest('hex').slice(0, 8);
    expect(domainHash('Example.COM')).toBe(expected);
    expect(generateKey('svc', 'public', 'example.com')).toMatch(new RegExp(`^svc_pk_${expected}_[0-9a-f]{64}$`));
  });

  it('never makes the same key twice', () => {
    expect(generateKey('svc', 'usage')).not.toBe(generateKey('svc', 'usage'));
  });

  it('recognises shapes and rejects the rest', () => {
    expect(keyTypeOf('svc', generateKey('svc', 'admin'))).toBe('admin');
    expect(keyTypeOf('svc', generateKey('svc', 'public', 'a.com'))).toBe('public');
    expect(keyTypeOf('svc', generateKey('acme', 'admin'))).toBeNull();
    expect(keyTypeOf('svc', 'svc_sk_admin_xyz')).toBeNull();
    expect(keyTypeOf('svc', `svc_sk_root_${'a'.repeat(64)}`)).toBeNull();
  });

  it('masks keys for listings and hashes them with sha256', () => {
    const key = `svc_sk_usage_${'0'.repeat(60)}9f3a`;
    expect(previewKey(key)).toBe('svc_sk_usage_…9f3a');
    expect(hashKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
  });
});
