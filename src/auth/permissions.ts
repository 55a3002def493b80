/**
 * The one permission vocabulary (D-6), its input aliases, and what each key type may hold (D-7).
 * Pure functions: the guard, the operator's pages and the key service use them.
 */
export const PERMISSIONS = [
  'email.send',
  'email.read',
  'forms.send',
  'forms.read',
  'forms.write',
  'domains.read',
  'domains.write',
  'collections.read',
  'collections.write',
  'projects.read',
  'projects.write',
  'templates.read',
  'templates.write',
  'lists.read',
  'lists.write',
  'suppression.read',
  'suppression.write',
  'webhooks.read',
  'webhooks.write',
  'analytics.read',
  'billing.read',
  'billing.write',
  'keys.manage',
  'settings.write',
  // The operator's pages outside the API: Bull Board (viewing; retrying, cleaning, pausing…) and /metrics.
  'operator.queues',
  'operator.queues.manage',
  'operator.metrics',
] as const;

export type Permission = (typeof PERMISSIONS)[number];
export type KeyType = 'admin' | 'usage' | 'public';
export const KEY_TYPES: readonly KeyType[] = ['admin', 'usage', 'public'];

const ALIASES: Record<string, readonly Permission[]> = {
  'forms:send': ['forms.send'],
  forms: ['forms.read', 'forms.write', 'forms.send'],
  domains: ['domains.read', 'domains.write'],
  analytics: ['analytics.read'],
};

/** Admin-only families: the spec's access tables give them to admin keys alone. */
const ADMIN_ONLY = /^(domains|billing|projects|collections|operator)\.|^(keys\.manage|settings\.write)$/;
/** Only keys of the operator account run the installation: a tenant's keys never hold these. */
const OPERATOR_ONLY = /^operator\./;

const OPERATOR_CEILINGS: Record<KeyType, readonly Permission[]> = {
  admin: PERMISSIONS,
  usage: PERMISSIONS.filter((p) => !ADMIN_ONLY.test(p)),
  public: ['forms.send'],
};

const TENANT_CEILINGS: Record<KeyType, readonly Permission[]> = {
  admin: PERMISSIONS.filter((p) => !OPERATOR_ONLY.test(p)),
  usage: OPERATOR_CEILINGS.usage,
  public: OPERATOR_CEILINGS.public,
};

export function isPermission(name: string): name is Permission {
  return (PERMISSIONS as readonly string[]).includes(name);
}

/**
 * Everything a key of `keyType` may hold, and what it gets when it names no permissions. `isOperator`: the
 * key belongs to the operator account (accounts.is_operator), the only one whose admin keys may hold operator.*.
 */
export function ceilingOf(keyType: KeyType, isOperator: boolean): readonly Permission[] {
  return (isOperator ? OPERATOR_CEILINGS : TENANT_CEILINGS)[keyType];
}

export type NormalizeResult = { permissions: Permission[] } | { unknown: string[] };

/** Expands aliases and de-duplicates, in the vocabulary's order; reports names it does not know. */
export function normalizePermissions(names: readonly string[]): NormalizeResult {
  const wanted = new Set<Permission>();
  const unknown: string[] = [];
  for (const raw of names) {
    const name = raw.trim();
    if (isPermission(name)) wanted.add(name);
    else if (Object.hasOwn(ALIASES, name)) ALIASES[name].forEach((p) => wanted.add(p));
    else unknown.push(raw);
  }
  if (unknown.length > 0) return { unknown };
  return { permissions: PERMISSIONS.filter((p) => wanted.has(p)) };
}

/** Permissions in `permissions` that a key of `keyType` (of the operator account or not) may not hold. */
export function aboveCeiling(keyType: KeyType, permissions: readonly Permission[], isOperator: boolean): Permission[] {
  const ceiling = ceilingOf(keyType, isOperator);
  return permissions.filter((p) => !ceiling.includes(p));
}

/** The narrowest key type whose ceiling holds every permission asked for (D-9). */
export function inferKeyType(permissions: readonly Permission[]): Exclude<KeyType, 'public'> {
  // Usage keys hold the same permissions in every account.
  return aboveCeiling('usage', permissions, true).length === 0 ? 'usage' : 'admin';
}
