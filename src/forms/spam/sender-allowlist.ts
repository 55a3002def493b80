import { isEmail } from 'class-validator';
import type { SettingsChecker } from '../../common/settings-checker';
import { normalizeDomainName } from '../../domains/domain-name';

/** Entries a form's `spam_protection.allowlist` holds at most. */
export const ALLOWLIST_LIMIT = 200;

/**
 * `spam_protection.allowlist`: sender addresses (`ada@example.org`) and whole domains (`@partner.example`) whose
 * posts skip the content filter. Stored lower-case, domains in their ASCII form, each once.
 */
export function checkAllowlist(value: unknown, field: string, check: SettingsChecker): string[] | undefined {
  if (!Array.isArray(value) || value.length > ALLOWLIST_LIMIT) {
    return check.fail(field, `must be a list of at most ${ALLOWLIST_LIMIT} addresses (ada@example.org) or domains (@partner.example)`);
  }
  const entries = value.map((entry, i) => {
    const normalized = typeof entry === 'string' ? allowlistEntry(entry) : null;
    return (
      normalized ?? check.fail(`${field}[${i}]`, 'must be an email address (ada@example.org) or a domain after an @ (@partner.example)')
    );
  });
  return entries.every((entry) => entry !== undefined) ? [...new Set(entries)] : undefined;
}

function allowlistEntry(entry: string): string | null {
  const trimmed = entry.trim();
  if (trimmed.startsWith('@')) {
    const domain = normalizeDomainName(trimmed.slice(1));
    return domain && `@${domain}`;
  }
  return isEmail(trimmed) ? addressKey(trimmed) : null;
}

/** An address compared case-insensitively, its domain in ASCII. */
function addressKey(address: string): string | null {
  const at = address.lastIndexOf('@');
  const domain = normalizeDomainName(address.slice(at + 1));
  return domain && `${address.slice(0, at).toLowerCase()}@${domain}`;
}

/**
 * Whether the sender (the submission's `email` field) is on the allowlist: the address itself, or its domain. The
 * field is what the visitor typed: an allowlist only spares known senders the content filter (the honeypots and the
 * challenge still apply to them).
 */
export function senderAllowed(allowlist: readonly string[] | undefined, email: string | undefined): boolean {
  if (!allowlist?.length || !email || !isEmail(email.trim())) return false;
  const key = addressKey(email.trim());
  return key !== null && (allowlist.includes(key) || allowlist.includes(key.slice(key.lastIndexOf('@'))));
}
