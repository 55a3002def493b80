import type { AccountTier } from '../config/app-config.service';
import type { KeyType, Permission } from './permissions';

/** Restrictions a key may carry (spec "API key", D-8). Stored as given, snake_case like the spec. */
export interface KeyRestrictions {
  ip_whitelist?: string[];
  domain_restrictions?: string[];
  /** Requests per hour; replaces the key's rateLimit. */
  rate_limit?: number;
  /** Requests per minute. */
  burst_limit?: number;
  expires_at?: string;
  /** The key's own hourly and per-minute limits do not apply (the account's and the endpoint's still do). */
  exempt?: boolean;
  /** Scales the key's own hourly and per-minute limits. */
  multiplier?: number;
}

/** Who is calling: put on the request by the guard, read with @CurrentAuth(). */
export interface AuthContext {
  accountId: string;
  accountTier: AccountTier;
  isOperator: boolean;
  keyId: string;
  keyType: KeyType;
  permissions: readonly Permission[];
  domainScope: string | null;
  /** Requests per hour; null: no hourly limit of the key's own (its account's plan still bounds it). */
  rateLimit: number | null;
  restrictions: KeyRestrictions;
}
