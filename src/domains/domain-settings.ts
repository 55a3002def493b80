import { SettingsChecker } from '../common/settings-checker';

const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

export const DOMAIN_LIMITS = {
  contactRecipients: 50,
  forwardingRules: 1000,
  destinations: 20,
} as const;

/** alias local part (lower-cased) or `*` → destination addresses. */
export function checkForwarding(value: unknown, field: string, check: SettingsChecker): Record<string, string[]> | undefined {
  if (!check.isObject(value, field)) return undefined;
  const entries = Object.entries(value);
  if (entries.length > DOMAIN_LIMITS.forwardingRules) return check.fail(field, `at most ${DOMAIN_LIMITS.forwardingRules} rules`);
  const before = check.errors.length;
  const rules: Record<string, string[]> = {};
  for (const [rawAlias, destinations] of entries) {
    const alias = rawAlias.trim().toLowerCase();
    if (alias !== '*' && (alias.length > 64 || !LOCAL_PART.test(alias))) {
      check.fail(`${field}.${rawAlias}`, 'alias must be the local part of an address (as in info@…) or *');
      continue;
    }
    if (rules[alias]) {
      check.fail(`${field}.${rawAlias}`, `duplicate alias ${alias}`);
      continue;
    }
    const list = check.emails(destinations, `${field}.${rawAlias}`, DOMAIN_LIMITS.destinations);
    if (list) rules[alias] = list;
  }
  return check.errors.length === before ? rules : undefined;
}
