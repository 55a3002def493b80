import * as ipaddr from 'ipaddr.js';
import type { AuthContext, KeyRestrictions } from '../auth/auth-context';
import type { Permission } from '../auth/permissions';
import { hostMatchesDomain } from '../common/domain-match';
import { keyLimits } from '../rate-limits/rate-limit.policy';

/**
 * A key never makes a key wider than itself: what the new key may do must be something the creating key
 * may do already. Pure functions; ApiKeysService applies them to POST /api-keys, POST /auth/keys and to
 * PATCH /api-keys/{keyId} (the changed key as a whole, against the calling key).
 */

/** What bounds the keys a key creates. */
export type CreatorKey = Pick<AuthContext, 'permissions' | 'rateLimit' | 'restrictions'>;

/** A key as it will be stored (a new one, or one being changed). */
export interface KeyGrant {
  permissions: readonly Permission[];
  /** Null: no hourly limit of its own. */
  rateLimit: number | null;
  restrictions: KeyRestrictions;
  domainScope: string | null;
}

export interface Widening {
  field: string;
  message: string;
}

/**
 * Fills what the request leaves out from the creator, so a narrow key makes narrow keys without restating
 * everything: its IP allowlist, domains and expiry; its per-minute limit; and an hourly limit no higher
 * than its own (the type's default otherwise, also when the creator has no hourly limit: a key made by
 * another key has one unless it asks for none with rateLimit null). `exempt` and `multiplier` are not
 * copied: the creator's limits are copied as they apply to it, already scaled.
 */
export function inheritRestrictions(
  creator: CreatorKey,
  requested: { rateLimit?: number | null; restrictions: KeyRestrictions },
  defaultRateLimit: number,
): { rateLimit: number | null; restrictions: KeyRestrictions } {
  const restrictions = { ...requested.restrictions };
  const own = creator.restrictions;
  if (restrictions.ip_whitelist === undefined && own.ip_whitelist?.length) restrictions.ip_whitelist = own.ip_whitelist;
  if (restrictions.domain_restrictions === undefined && own.domain_restrictions?.length) {
    restrictions.domain_restrictions = own.domain_restrictions;
  }
  if (restrictions.expires_at === undefined && own.expires_at) restrictions.expires_at = own.expires_at;
  const limits = keyLimits(creator);
  if (restrictions.burst_limit === undefined && limits.perMinute !== null) restrictions.burst_limit = limits.perMinute;
  if (requested.rateLimit !== undefined) return { rateLimit: requested.rateLimit, restrictions };
  let rateLimit = defaultRateLimit;
  if (restrictions.rate_limit === undefined && limits.perHour !== null) rateLimit = Math.min(rateLimit, limits.perHour);
  return { rateLimit, restrictions };
}

/**
 * Every way the grant goes beyond the creator; empty when it stays within. A creator without an hourly
 * limit bounds none; one with an hourly limit refuses a grant without one. `bound` names the creator in the
 * messages (PATCH says 'the calling key').
 */
export function widerThan(creator: CreatorKey, grant: KeyGrant, bound = 'the creating key'): Widening[] {
  const wider: Widening[] = [];
  const own = creator.restrictions;
  const asked = grant.restrictions;

  const missing = grant.permissions.filter((p) => !creator.permissions.includes(p));
  if (missing.length > 0) {
    wider.push({ field: 'permissions', message: `${bound} does not hold ${missing.join(', ')}` });
  }

  if (own.ip_whitelist?.length) {
    const outside = asked.ip_whitelist?.length ? asked.ip_whitelist.filter((r) => !rangeWithin(r, own.ip_whitelist!)) : null;
    if (outside === null) {
      wider.push({ field: 'restrictions.ip_whitelist', message: `${bound} is limited to ${own.ip_whitelist.join(', ')}` });
    } else if (outside.length > 0) {
      wider.push({
        field: 'restrictions.ip_whitelist',
        message: `${outside.join(', ')} not within ${bound}'s ip_whitelist (${own.ip_whitelist.join(', ')})`,
      });
    }
  }

  if (own.domain_restrictions?.length) {
    const allowed = own.domain_restrictions;
    const outside = asked.domain_restrictions?.length ? asked.domain_restrictions.filter((d) => !hostMatchesDomain(d, allowed)) : null;
    if (outside === null) {
      wider.push({ field: 'restrictions.domain_restrictions', message: `${bound} is limited to ${allowed.join(', ')}` });
    } else if (outside.length > 0) {
      wider.push({
        field: 'restrictions.domain_restrictions',
        message: `${outside.join(', ')} not within ${bound}'s domain_restrictions (${allowed.join(', ')})`,
      });
    }
    if (grant.domainScope !== null && !hostMatchesDomain(grant.domainScope, allowed)) {
      wider.push({
        field: 'domainScope',
        message: `${grant.domainScope} is not within ${bound}'s domain_restrictions (${allowed.join(', ')})`,
      });
    }
  }

  if (own.expires_at) {
    const limit = Date.parse(own.expires_at);
    if (!asked.expires_at || Date.parse(asked.expires_at) > limit) {
      wider.push({
        field: 'restrictions.expires_at',
        message: `${asked.expires_at ? `${asked.expires_at} is later than` : 'the key must expire by'} ${bound}'s expiry ${new Date(limit).toISOString()}`,
      });
    }
  }

  if (asked.exempt && !own.exempt) {
    wider.push({ field: 'restrictions.exempt', message: `${bound} is not exempt from its own limits` });
    return wider;
  }
  const mine = keyLimits(creator);
  const theirs = keyLimits(grant);
  const windows = [
    ['perHour', 'an hourly', asked.rate_limit !== undefined ? 'restrictions.rate_limit' : 'rateLimit'],
    ['perMinute', 'a per-minute', 'restrictions.burst_limit'],
  ] as const;
  for (const [window, label, field] of windows) {
    const limit = mine[window];
    const asks = theirs[window];
    if (limit === null || (asks !== null && asks <= limit)) continue;
    const scaled = asked.multiplier !== undefined && asked.multiplier !== 1 ? ` (with multiplier ${asked.multiplier})` : '';
    wider.push({
      field,
      message:
        asks === null ? `${bound} has ${label} limit of ${limit}` : `${label} limit of ${asks}${scaled} is above ${bound}'s ${limit}`,
    });
  }
  return wider;
}

/** True when every address of the range (address or CIDR) lies inside one of the allowed ranges. */
export function rangeWithin(range: string, allowed: readonly string[]): boolean {
  const [address, bits] = parseRange(range);
  return allowed.some((entry) => {
    const [outer, outerBits] = parseRange(entry);
    return address.kind() === outer.kind() && bits >= outerBits && address.match(outer, outerBits);
  });
}

function parseRange(entry: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (entry.includes('/')) return ipaddr.parseCIDR(entry);
  const address = ipaddr.parse(entry);
  return [address, address.kind() === 'ipv4' ? 32 : 128];
}
