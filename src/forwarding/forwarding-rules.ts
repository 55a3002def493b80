/** Which rule of a domain an address matches, and where its mail goes. */
export interface RuleMatch {
  /** The alias as stored (`info`), or `*`. */
  rule: string;
  destinations: string[];
}

/**
 * The rule for a local part (D-31), compared case-insensitively: the exact alias; else, for a tagged address
 * (`info+news`), the alias without its tag; else the wildcard `*`; else none.
 */
export function matchRule(rules: Readonly<Record<string, string[]>> | undefined, localPart: string): RuleMatch | null {
  if (!rules) return null;
  const local = localPart.toLowerCase();
  const plus = local.indexOf('+');
  const candidates = plus > 0 ? [local, local.slice(0, plus), '*'] : [local, '*'];
  for (const rule of candidates) {
    const destinations = rules[rule];
    if (destinations?.length) return { rule, destinations };
  }
  return null;
}

/** `local@domain` split at its last `@`, the domain lower-cased; null when either part is empty. */
export function splitAddress(address: string): { local: string; domain: string } | null {
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return null;
  return { local: address.slice(0, at), domain: address.slice(at + 1).toLowerCase() };
}
