import type { Request } from 'express';
import type { ResolvedKey } from './api-key.cache';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { hostMatchesDomain } from '../common/domain-match';
import { requestOriginHost } from './credentials';
import type { KeyType, Permission } from './permissions';

/**
 * The checks every use of a key passes, on API routes (ApiKeyGuard) and on the operator's pages outside the
 * API (OperatorAccess: Bull Board, /metrics): written once so that no door skips one.
 */

/** What a caller of `checkKeyAccess` needs of the key. */
export interface KeyAccessRequirement {
  keyTypes: readonly KeyType[];
  /** Only keys of the operator account. */
  operator?: boolean;
  /** Every one of them. */
  permissions: readonly Permission[];
}

/** 401 AUTH_KEY_EXPIRED once the key's expiry (restrictions.expires_at) has passed (D-8). */
export function checkNotExpired(key: Pick<ResolvedKey, 'expiresAt'>, now = Date.now()): void {
  if (key.expiresAt !== null && key.expiresAt <= now) {
    throw new AppException(ErrorCode.AuthKeyExpired, 'The API key has expired');
  }
}

/** Where the key may be used from (D-8): ip_whitelist → 403 IP_NOT_ALLOWED, domain_restrictions → 403 DOMAIN_NOT_ALLOWED. */
export function checkRestrictions(key: Pick<ResolvedKey, 'ipAllowed' | 'restrictions'>, request: Request): void {
  if (key.ipAllowed && !key.ipAllowed(request.ip)) {
    throw new AppException(ErrorCode.IpNotAllowed, `This key may not be used from ${request.ip}`);
  }
  const allowedDomains = key.restrictions.domain_restrictions;
  if (allowedDomains?.length) {
    // Server-side callers send no Origin; features that know a domain (email `from`) check it themselves.
    const host = requestOriginHost(request);
    if (host !== null && !hostMatchesDomain(host, allowedDomains)) {
      throw new AppException(ErrorCode.DomainNotAllowed, `This key may not be used from ${host}`);
    }
  }
}

/** The key's type, account and permissions against what the route needs: 403 FORBIDDEN naming what is missing. */
export function checkKeyAccess(key: Pick<ResolvedKey, 'keyType' | 'isOperator' | 'permissions'>, requirement: KeyAccessRequirement): void {
  if (!requirement.keyTypes.includes(key.keyType)) {
    throw new AppException(
      ErrorCode.Forbidden,
      `A ${key.keyType} key cannot call this route (allowed key types: ${requirement.keyTypes.join(', ')})`,
    );
  }
  if (requirement.operator && !key.isOperator) {
    throw new AppException(ErrorCode.Forbidden, 'Only keys of the operator account can call this route');
  }
  const missing = requirement.permissions.filter((permission) => !key.permissions.includes(permission));
  if (missing.length > 0) {
    throw new AppException(ErrorCode.Forbidden, `This key lacks the permission${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  }
}
