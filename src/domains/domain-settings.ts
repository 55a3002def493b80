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

/** How mail forwarded for a domain is filtered at DATA (PUT /domains/{domain} inboundFiltering). */
export interface InboundFiltering {
  /** SpamAssassin score at which a message is refused (554 5.7.1); spamd's own default is 5. */
  spamThreshold: number;
  /** Take attachments that are programs, installers or disk images (refused by default). */
  allowExecutableAttachments: boolean;
}

export const INBOUND_FILTERING_DEFAULTS: InboundFiltering = { spamThreshold: 5, allowExecutableAttachments: false };
const SPAM_THRESHOLD = { min: 1, max: 1000 };

/** The section with each setting it leaves out at its default. */
export function checkInboundFiltering(value: unknown, field: string, check: SettingsChecker): InboundFiltering | undefined {
  if (!check.isObject(value, field)) return undefined;
  const before = check.errors.length;
  check.unknownKeys(value, Object.keys(INBOUND_FILTERING_DEFAULTS), field);
  const filtering = { ...INBOUND_FILTERING_DEFAULTS };
  const { spamThreshold, allowExecutableAttachments } = value;
  if (spamThreshold !== undefined) {
    if (typeof spamThreshold !== 'number' || !(spamThreshold >= SPAM_THRESHOLD.min && spamThreshold <= SPAM_THRESHOLD.max)) {
      check.fail(`${field}.spamThreshold`, `must be a number from ${SPAM_THRESHOLD.min} to ${SPAM_THRESHOLD.max}`);
    } else filtering.spamThreshold = spamThreshold;
  }
  if (allowExecutableAttachments !== undefined) {
    const allow = check.boolean(allowExecutableAttachments, `${field}.allowExecutableAttachments`);
    if (allow !== undefined) filtering.allowExecutableAttachments = allow;
  }
  return check.errors.length === before ? filtering : undefined;
}
