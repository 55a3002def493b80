import type { Request } from 'express';
import type { ResolvedKey } from './api-key.cache';
import { AppException } from '../common/errors/app.exception';
import { compileIpAllowlist } from '../common/http/ip-match';
import { checkKeyAccess, checkNotExpired, checkRestrictions } from './key-checks';

/** The error code a check throws, or null when it passes. */
function refusal(check: () => void): string | null {
  try {
    check();
    return null;
  } catch (err) {
    if (err instanceof AppException) return `${err.status} ${err.code}`;
    throw err;
  }
}

const request = (ip: string, headers: Record<string, string> = {}) => ({ ip, headers }) as unknown as Request;

describe('key checks', () => {
  it('refuses a key from its expiry on (401 AUTH_KEY_EXPIRED)', () => {
    const now = Date.parse('2026-11-26T12:00:00Z');
    expect(refusal(() => checkNotExpired({ expiresAt: null }, now))).toBeNull();
    expect(refusal(() => checkNotExpired({ expiresAt: now + 1 }, now))).toBeNull();
    expect(refusal(() => checkNotExpired({ expiresAt: now }, now))).toBe('401 AUTH_KEY_EXPIRED');
  });

  it('refuses an address outside the IP allowlist (403 IP_NOT_ALLOWED) and a foreign origin (403 DOMAIN_NOT_ALLOWED)', () => {
    const key: Pick<ResolvedKey, 'ipAllowed' | 'restrictions'> = {
      ipAllowed: compileIpAllowlist(['10.1.0.0/16']),
      restrictions: { ip_whitelist: ['10.1.0.0/16'], domain_restrictions: ['acme.test'] },
    };
    expect(refusal(() => checkRestrictions(key, request('10.1.2.3')))).toBeNull();
    expect(refusal(() => checkRestrictions(key, request('10.2.0.1')))).toBe('403 IP_NOT_ALLOWED');
    expect(refusal(() => checkRestrictions(key, request('10.1.2.3', { origin: 'https://app.acme.test' })))).toBeNull();
    expect(refusal(() => checkRestrictions(key, request('10.1.2.3', { origin: 'https://evil.test' })))).toBe('403 DOMAIN_NOT_ALLOWED');
    expect(refusal(() => checkRestrictions({ ipAllowed: null, restrictions: {} }, request('192.0.2.1')))).toBeNull();
  });

  it('refuses another key type, a tenant key on operator routes and a missing permission (403 FORBIDDEN)', () => {
    const operatorAdmin = { keyType: 'admin', isOperator: true, permissions: ['operator.queues'] } as const;
    const need = { keyTypes: ['admin'] as const, operator: true, permissions: ['operator.queues'] as const };
    expect(refusal(() => checkKeyAccess(operatorAdmin, need))).toBeNull();
    expect(refusal(() => checkKeyAccess({ ...operatorAdmin, keyType: 'usage' }, need))).toBe('403 FORBIDDEN');
    expect(refusal(() => checkKeyAccess({ ...operatorAdmin, isOperator: false }, need))).toBe('403 FORBIDDEN');
    expect(() => checkKeyAccess(operatorAdmin, { ...need, permissions: ['operator.queues', 'operator.queues.manage'] })).toThrow(
      'This key lacks the permission operator.queues.manage',
    );
  });
});
