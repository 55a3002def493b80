import { isEmail } from 'class-validator';
import { normalizeDomainName } from './domain-name';

export interface FieldError {
  field: string;
  message: string;
}

export interface FormAcknowledgment {
  enabled: boolean;
  /** Name of a configured template for the acknowledgment email. */
  template?: string;
  subject?: string;
}

export type SpamProtectionLevel = 'off' | 'low' | 'medium' | 'high';
export const SPAM_PROTECTION_LEVELS: readonly SpamProtectionLevel[] = ['off', 'low', 'medium', 'high'];

export interface FormSpamProtection {
  level?: SpamProtectionLevel;
  /** Name of the hidden field that must stay empty (default `_service_honeypot`). */
  honeypot?: string;
  /** Submissions per hour per client IP. */
  rate_limit?: number;
  content_filter?: boolean;
}

/**
 * A form's settings, as in the spec's configuration file (`domains.<d>.forms.<slug>`, `collections`).
 * `to` is accepted on input and stored as `recipients`.
 */
export interface FormSettings {
  name?: string;
  recipients?: string[];
  subject?: string;
  /** Whether the notification's Reply-To is the submitter. */
  replies?: boolean;
  /** An address, or the name of the submitted field that holds one. */
  replyTo?: string;
  acknowledgment?: FormAcknowledgment;
  /** Name of a configured template for the notification email. */
  template?: string;
  /** Submissions per hour per client IP (replaces the default limits, D-11). */
  rateLimit?: number;
  spam_protection?: FormSpamProtection;
  /** Origins (https://site.example) or host names allowed to post without a credential, besides verified domains (D-26). */
  allowedOrigins?: string[];
  /** Where a browser is sent after a successful post (D-25). */
  redirect?: string;
  /** The spec's per-form `rate_limiting` block, kept as given for the rate-limit feature. */
  rate_limiting?: Record<string, unknown>;
}

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SLUG_RULE = '1-63 lower-case letters, digits, "-" or "_", starting with a letter or digit';
const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const FIELD_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const TEMPLATE_NAME = /^[A-Za-z0-9_.-]{1,200}$/;

export const LIMITS = {
  recipients: 50,
  contactRecipients: 50,
  forwardingRules: 1000,
  destinations: 20,
  forms: 200,
  allowedOrigins: 50,
} as const;

const FORM_KEYS = [
  'name',
  'to',
  'recipients',
  'subject',
  'replies',
  'replyTo',
  'acknowledgment',
  'template',
  'rateLimit',
  'spam_protection',
  'allowedOrigins',
  'redirect',
  'rate_limiting',
];

/** Collects errors with the path of the bad value (`forms.contact.acknowledgment.enabled`). */
export class SettingsChecker {
  readonly errors: FieldError[] = [];

  fail(field: string, message: string): undefined {
    this.errors.push({ field, message });
    return undefined;
  }

  isObject(value: unknown, field: string): value is Record<string, unknown> {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return true;
    this.fail(field, 'must be an object');
    return false;
  }

  unknownKeys(value: Record<string, unknown>, allowed: readonly string[], field: string): void {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) this.fail(`${field}.${key}`, `unknown setting; allowed: ${allowed.join(', ')}`);
    }
  }

  /** One address or a list of them, trimmed; at least one. */
  emails(value: unknown, field: string, max: number): string[] | undefined {
    const list = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(list) || list.length === 0) return this.fail(field, 'must be an email address or a non-empty list of them');
    if (list.length > max) return this.fail(field, `at most ${max} addresses`);
    const out: string[] = [];
    list.forEach((entry, i) => {
      const address = typeof entry === 'string' ? entry.trim() : '';
      if (!isEmail(address)) this.fail(Array.isArray(value) ? `${field}[${i}]` : field, `not an email address: ${String(entry)}`);
      else out.push(address);
    });
    return out.length === list.length ? [...new Set(out)] : undefined;
  }

  /** A single-line string (it may end up in a mail header, D-28). */
  text(value: unknown, field: string, max: number): string | undefined {
    if (typeof value !== 'string' || value.trim() === '') return this.fail(field, 'must be a non-empty string');
    if (/[\r\n]/.test(value)) return this.fail(field, 'must not contain line breaks');
    if (value.length > max) return this.fail(field, `at most ${max} characters`);
    return value;
  }

  matches(value: unknown, field: string, pattern: RegExp, rule: string): string | undefined {
    if (typeof value !== 'string' || !pattern.test(value)) return this.fail(field, `must be ${rule}`);
    return value;
  }

  boolean(value: unknown, field: string): boolean | undefined {
    if (typeof value !== 'boolean') return this.fail(field, 'must be true or false');
    return value;
  }

  positiveInt(value: unknown, field: string, max = 1_000_000): number | undefined {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
      return this.fail(field, `must be a whole number from 1 to ${max}`);
    }
    return value;
  }
}

export function isSlug(value: string): boolean {
  return SLUG_PATTERN.test(value);
}

export function slugRule(): string {
  return SLUG_RULE;
}

/** An allowed origin: `https://host[:port]` becomes its origin, a bare host name (optionally `*.`-prefixed) its lower-case form. */
function allowedOrigin(value: unknown, field: string, check: SettingsChecker): string | undefined {
  if (typeof value !== 'string') return check.fail(field, 'must be an origin or a host name');
  const trimmed = value.trim();
  if (/^https?:\/\//i.test(trimmed)) {
    try {
      const url = new URL(trimmed);
      if ((url.pathname === '/' || url.pathname === '') && !url.search && !url.hash && !url.username) return url.origin;
    } catch {
      // falls through to the error below
    }
    return check.fail(field, `not an origin (scheme://host[:port], no path): ${value}`);
  }
  const host = trimmed.toLowerCase().replace(/^\*\./, '');
  if (host === 'localhost' || normalizeDomainName(host) === host) return trimmed.toLowerCase();
  return check.fail(field, `not an origin or host name: ${value}`);
}

function redirectUrl(value: unknown, field: string, check: SettingsChecker): string | undefined {
  if (typeof value === 'string' && value.length <= 2000) {
    try {
      const url = new URL(value);
      if (url.protocol === 'https:' || url.protocol === 'http:') return value;
    } catch {
      // falls through to the error below
    }
  }
  return check.fail(field, 'must be an absolute http(s) URL');
}

/**
 * Validates one form's settings. `requireRecipients`: collection forms must name their recipients; a
 * domain's form may leave them out and then goes to the domain's contactRecipients.
 */
export function checkFormSettings(
  value: unknown,
  field: string,
  check: SettingsChecker,
  options: { requireRecipients: boolean },
): FormSettings | undefined {
  if (!check.isObject(value, field)) return undefined;
  const before = check.errors.length;
  check.unknownKeys(value, FORM_KEYS, field);
  const form: FormSettings = {};
  if (value.to !== undefined && value.recipients !== undefined) check.fail(`${field}.to`, 'give either to or recipients, not both');
  const recipientsKey = value.recipients !== undefined ? 'recipients' : 'to';
  if (value[recipientsKey] !== undefined) {
    form.recipients = check.emails(value[recipientsKey], `${field}.${recipientsKey}`, LIMITS.recipients);
  } else if (options.requireRecipients) {
    check.fail(`${field}.recipients`, 'recipients (or to) is required');
  }
  if (value.name !== undefined) form.name = check.text(value.name, `${field}.name`, 200);
  if (value.subject !== undefined) form.subject = check.text(value.subject, `${field}.subject`, 998);
  if (value.replies !== undefined) form.replies = check.boolean(value.replies, `${field}.replies`);
  if (value.replyTo !== undefined) {
    const replyTo = typeof value.replyTo === 'string' ? value.replyTo.trim() : '';
    if (isEmail(replyTo) || FIELD_NAME.test(replyTo)) form.replyTo = replyTo;
    else check.fail(`${field}.replyTo`, 'must be an email address or the name of a submitted field');
  }
  if (value.template !== undefined) {
    form.template = check.matches(value.template, `${field}.template`, TEMPLATE_NAME, 'a template name (letters, digits, "_", "-", ".")');
  }
  if (value.rateLimit !== undefined) form.rateLimit = check.positiveInt(value.rateLimit, `${field}.rateLimit`);
  if (value.acknowledgment !== undefined) form.acknowledgment = checkAcknowledgment(value.acknowledgment, `${field}.acknowledgment`, check);
  if (value.spam_protection !== undefined) {
    form.spam_protection = checkSpamProtection(value.spam_protection, `${field}.spam_protection`, check);
  }
  if (value.allowedOrigins !== undefined) {
    if (!Array.isArray(value.allowedOrigins) || value.allowedOrigins.length > LIMITS.allowedOrigins) {
      check.fail(`${field}.allowedOrigins`, `must be a list of at most ${LIMITS.allowedOrigins} origins or host names`);
    } else {
      const origins = value.allowedOrigins.map((o, i) => allowedOrigin(o, `${field}.allowedOrigins[${i}]`, check));
      form.allowedOrigins = [...new Set(origins.filter((o): o is string => o !== undefined))];
    }
  }
  if (value.redirect !== undefined) form.redirect = redirectUrl(value.redirect, `${field}.redirect`, check);
  if (value.rate_limiting !== undefined && check.isObject(value.rate_limiting, `${field}.rate_limiting`)) {
    form.rate_limiting = value.rate_limiting;
  }
  return check.errors.length === before ? form : undefined;
}

function checkAcknowledgment(value: unknown, field: string, check: SettingsChecker): FormAcknowledgment | undefined {
  if (!check.isObject(value, field)) return undefined;
  check.unknownKeys(value, ['enabled', 'template', 'subject'], field);
  const enabled = check.boolean(value.enabled, `${field}.enabled`);
  const ack: FormAcknowledgment = { enabled: enabled ?? false };
  if (value.template !== undefined) {
    ack.template = check.matches(value.template, `${field}.template`, TEMPLATE_NAME, 'a template name (letters, digits, "_", "-", ".")');
  }
  if (value.subject !== undefined) ack.subject = check.text(value.subject, `${field}.subject`, 998);
  return ack;
}

function checkSpamProtection(value: unknown, field: string, check: SettingsChecker): FormSpamProtection | undefined {
  if (!check.isObject(value, field)) return undefined;
  check.unknownKeys(value, ['level', 'honeypot', 'rate_limit', 'content_filter'], field);
  const spam: FormSpamProtection = {};
  if (value.level !== undefined) {
    if (SPAM_PROTECTION_LEVELS.includes(value.level as SpamProtectionLevel)) spam.level = value.level as SpamProtectionLevel;
    else check.fail(`${field}.level`, `must be one of ${SPAM_PROTECTION_LEVELS.join(', ')}`);
  }
  if (value.honeypot !== undefined) spam.honeypot = check.matches(value.honeypot, `${field}.honeypot`, FIELD_NAME, 'a field name');
  if (value.rate_limit !== undefined) spam.rate_limit = check.positiveInt(value.rate_limit, `${field}.rate_limit`);
  if (value.content_filter !== undefined) spam.content_filter = check.boolean(value.content_filter, `${field}.content_filter`);
  return spam;
}

/** slug → form settings, for a domain's or a collection's forms. `reserved` slugs collide with fixed routes. */
export function checkFormMap(
  value: unknown,
  field: string,
  check: SettingsChecker,
  options: { requireRecipients: boolean; reserved?: readonly string[] },
): Record<string, FormSettings> | undefined {
  if (!check.isObject(value, field)) return undefined;
  const entries = Object.entries(value);
  if (entries.length > LIMITS.forms) return check.fail(field, `at most ${LIMITS.forms} forms`);
  const before = check.errors.length;
  const forms: Record<string, FormSettings> = {};
  for (const [slug, settings] of entries) {
    if (!isSlug(slug)) {
      check.fail(`${field}.${slug}`, `form slug must be ${SLUG_RULE}`);
      continue;
    }
    if (options.reserved?.includes(slug)) {
      check.fail(`${field}.${slug}`, `the slug ${slug} is reserved`);
      continue;
    }
    const form = checkFormSettings(settings, `${field}.${slug}`, check, options);
    if (form) forms[slug] = form;
  }
  return check.errors.length === before ? forms : undefined;
}

/** alias local part (lower-cased) or `*` → destination addresses. */
export function checkForwarding(value: unknown, field: string, check: SettingsChecker): Record<string, string[]> | undefined {
  if (!check.isObject(value, field)) return undefined;
  const entries = Object.entries(value);
  if (entries.length > LIMITS.forwardingRules) return check.fail(field, `at most ${LIMITS.forwardingRules} rules`);
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
    const list = check.emails(destinations, `${field}.${rawAlias}`, LIMITS.destinations);
    if (list) rules[alias] = list;
  }
  return check.errors.length === before ? rules : undefined;
}
