/**
 * The one permission vocabulary (D-6), its input aliases, and what each key type may hold (D-7).
 * Pure functions: the guard and the key service both use them.
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
const ADMIN_ONLY = /^(domains|billing|projects|collections)\.|^(keys\.manage|settings\.write)$/;

const CEILINGS: Record<KeyType, readonly Permission[]> = {
  admin: PERMISSIONS,
  usage: PERMISSIONS.filter((p) => !ADMIN_ONLY.test(p)),
  public: ['forms.send'],
};

export function isPermission(name: string): name is Permission {
  return (PERMISSIONS as readonly string[]).includes(name);
}

export function ceilingOf(keyType: KeyType): readonly Permission[] {
  return CEILINGS[keyType];
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

/** Permissions in `permissions` that a key of `keyType` may not hold. */
export function aboveCeiling(keyType: KeyType, permissions: readonly Permission[]): Permission[] {
  const ceiling = CEILINGS[keyType];
  return permissions.filter((p) => !ceiling.includes(p));
}

/** The narrowest key type whose ceiling holds every permission asked for (D-9). */
export function inferKeyType(permissions: readonly Permission[]): Exclude<KeyType, 'public'> {
  return aboveCeiling('usage', permissions).length === 0 ? 'usage' : 'admin';
}
