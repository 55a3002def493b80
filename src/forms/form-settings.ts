import { isEmail } from 'class-validator';
import { isSlug, SettingsChecker, slugRule } from '../common/settings-checker';
import { normalizeDomainName } from '../domains/domain-name';
import { referencedVariable } from './spam/secret-reference';
import { checkAllowlist } from './spam/sender-allowlist';
import { ALLOWABLE_FILE_TYPES, NEVER_ALLOWED_EXTENSIONS } from './uploads/refused-types';

export interface FormAcknowledgment {
  enabled: boolean;
  /** Name of a configured template for the acknowledgment email. */
  template?: string;
  subject?: string;
  /** Reply-To of the acknowledgment; none when not set (never the owner's notification address). */
  replyTo?: string;
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
  /** A check every post must pass: our proof-of-work (ALTCHA) or a CAPTCHA provider's token. */
  challenge?: FormChallenge;
  /** The difficulty of the ALTCHA challenge: the upper bound of its secret number (ALTCHA_MAX_NUMBER). */
  altcha_maxnumber?: number;
  /**
   * The site secret of the CAPTCHA provider (turnstile, hcaptcha). Given: the secret itself; null in a change removes
   * the stored one. Stored: sealed (see spam/captcha-secret.ts). Never in a response.
   */
  captcha_secret?: string | null;
  /** In responses only: a secret is stored. Taken on input and ignored, so that what GET answers can be sent back. */
  captcha_secret_set?: boolean;
  /** Senders (`ada@example.org`, `@partner.example`) whose posts skip the content filter, not the honeypots or the challenge. */
  allowlist?: string[];
}

export type FormChallenge = 'altcha' | 'turnstile' | 'hcaptcha';
export const FORM_CHALLENGES: readonly FormChallenge[] = ['altcha', 'turnstile', 'hcaptcha'];

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
  /**
   * Addresses a post's `_cc` may copy the notification to (Formspree's `_cc`). A `_cc` address not listed here
   * gets nothing: a visitor can edit the form's HTML, and a form must not mail whoever they name.
   */
  ccAllowed?: string[];
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
  /** Fields every submission must carry, non-empty. */
  requiredFields?: string[];
  /** The spec's per-form `rate_limiting` block, kept as given for the rate-limit feature. */
  rate_limiting?: Record<string, unknown>;
  /** Upload types refused by default (uploads/refused-types.ts: `iso`, `docm`, `7z`…) that this form accepts. */
  allowedFileTypes?: string[];
}

const FIELD_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const TEMPLATE_NAME = /^[A-Za-z0-9_.-]{1,200}$/;

export const FORM_LIMITS = {
  recipients: 50,
  forms: 200,
  allowedOrigins: 50,
  requiredFields: 50,
  /** Submissions per hour per client IP: high enough for any real form, within PostgreSQL's integer. */
  rateLimit: 1_000_000_000,
} as const;

/**
 * The ALTCHA challenge's search space (altcha-lib's maxnumber): a browser tries half of it on average. ALTCHA's
 * documentation measures devices at 100,000 (0.3 s on a 2023 laptop, 2.5 s on a low-end 2023 phone) and altcha-lib
 * defaults to 1,000,000; below 10,000 it is no work at all, above 10,000,000 a phone needs minutes.
 */
export const ALTCHA_MAX_NUMBER = { default: 100_000, min: 10_000, max: 10_000_000 } as const;

/** The difficulty of a form's ALTCHA challenge, as issued and as verified. */
export function altchaMaxNumberOf(settings: FormSettings): number {
  return settings.spam_protection?.altcha_maxnumber ?? ALTCHA_MAX_NUMBER.default;
}

const FORM_KEYS = [
  'name',
  'to',
  'recipients',
  'subject',
  'replies',
  'replyTo',
  'ccAllowed',
  'acknowledgment',
  'template',
  'rateLimit',
  'spam_protection',
  'allowedOrigins',
  'redirect',
  'requiredFields',
  'rate_limiting',
  'allowedFileTypes',
];

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

function fieldNames(value: unknown, field: string, check: SettingsChecker): string[] | undefined {
  if (!Array.isArray(value) || value.length > FORM_LIMITS.requiredFields) {
    return check.fail(field, `must be a list of at most ${FORM_LIMITS.requiredFields} field names`);
  }
  const names = value.map((name, i) => check.matches(name, `${field}[${i}]`, FIELD_NAME, 'a field name (letters, digits, "_", "-", ".")'));
  return names.every((n) => n !== undefined) ? [...new Set(names)] : undefined;
}

/** Names of ALLOWABLE_FILE_TYPES, without a dot, lower case. */
function fileTypes(value: unknown, field: string, check: SettingsChecker): string[] | undefined {
  const max = ALLOWABLE_FILE_TYPES.size;
  if (!Array.isArray(value) || value.length > max)
    return check.fail(field, `must be a list of file types (extensions such as iso, docm, 7z; or pdf-javascript)`);
  const types = value.map((type, i) => {
    const name = typeof type === 'string' ? type.trim().replace(/^\./, '').toLowerCase() : '';
    if (ALLOWABLE_FILE_TYPES.has(name)) return name;
    const never = NEVER_ALLOWED_EXTENSIONS.has(name) ? ': programs and pages a browser runs are never accepted' : '';
    return check.fail(`${field}[${i}]`, `${String(type)} is not a file type refused by default that a form may allow${never}`);
  });
  return types.every((t) => t !== undefined) ? [...new Set(types)] : undefined;
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

export interface FormCheckOptions {
  /** Collection forms must name their recipients; a domain's form may leave them out (the domain's contactRecipients). */
  requireRecipients: boolean;
  /**
   * The provider whose stored secret a captcha_secret left out keeps (a change of a stored form). Without it a
   * turnstile or hcaptcha challenge needs its captcha_secret: the form is new or given whole.
   */
  keptCaptchaSecret?: FormChallenge;
}

/** Validates one form's settings. */
export function checkFormSettings(
  value: unknown,
  field: string,
  check: SettingsChecker,
  options: FormCheckOptions,
): FormSettings | undefined {
  if (!check.isObject(value, field)) return undefined;
  const before = check.errors.length;
  check.unknownKeys(value, FORM_KEYS, field);
  const form: FormSettings = {};
  if (value.to !== undefined && value.recipients !== undefined) check.fail(`${field}.to`, 'give either to or recipients, not both');
  const recipientsKey = value.recipients !== undefined ? 'recipients' : 'to';
  if (value[recipientsKey] !== undefined) {
    form.recipients = check.emails(value[recipientsKey], `${field}.${recipientsKey}`, FORM_LIMITS.recipients);
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
  if (value.ccAllowed !== undefined) {
    const empty = Array.isArray(value.ccAllowed) && value.ccAllowed.length === 0;
    form.ccAllowed = empty ? [] : check.emails(value.ccAllowed, `${field}.ccAllowed`, FORM_LIMITS.recipients);
  }
  if (value.template !== undefined) {
    form.template = check.matches(value.template, `${field}.template`, TEMPLATE_NAME, 'a template name (letters, digits, "_", "-", ".")');
  }
  if (value.rateLimit !== undefined) form.rateLimit = check.positiveInt(value.rateLimit, `${field}.rateLimit`, FORM_LIMITS.rateLimit);
  if (value.acknowledgment !== undefined) form.acknowledgment = checkAcknowledgment(value.acknowledgment, `${field}.acknowledgment`, check);
  if (value.spam_protection !== undefined) {
    form.spam_protection = checkSpamProtection(value.spam_protection, `${field}.spam_protection`, check, options.keptCaptchaSecret);
  }
  if (value.allowedOrigins !== undefined) {
    if (!Array.isArray(value.allowedOrigins) || value.allowedOrigins.length > FORM_LIMITS.allowedOrigins) {
      check.fail(`${field}.allowedOrigins`, `must be a list of at most ${FORM_LIMITS.allowedOrigins} origins or host names`);
    } else {
      const origins = value.allowedOrigins.map((o, i) => allowedOrigin(o, `${field}.allowedOrigins[${i}]`, check));
      form.allowedOrigins = [...new Set(origins.filter((o): o is string => o !== undefined))];
    }
  }
  if (value.redirect !== undefined) form.redirect = redirectUrl(value.redirect, `${field}.redirect`, check);
  if (value.requiredFields !== undefined) form.requiredFields = fieldNames(value.requiredFields, `${field}.requiredFields`, check);
  if (value.allowedFileTypes !== undefined) form.allowedFileTypes = fileTypes(value.allowedFileTypes, `${field}.allowedFileTypes`, check);
  if (value.rate_limiting !== undefined && check.isObject(value.rate_limiting, `${field}.rate_limiting`)) {
    form.rate_limiting = value.rate_limiting;
  }
  return check.errors.length === before ? form : undefined;
}

function checkAcknowledgment(value: unknown, field: string, check: SettingsChecker): FormAcknowledgment | undefined {
  if (!check.isObject(value, field)) return undefined;
  check.unknownKeys(value, ['enabled', 'template', 'subject', 'replyTo'], field);
  const enabled = check.boolean(value.enabled, `${field}.enabled`);
  const ack: FormAcknowledgment = { enabled: enabled ?? false };
  if (value.template !== undefined) {
    ack.template = check.matches(value.template, `${field}.template`, TEMPLATE_NAME, 'a template name (letters, digits, "_", "-", ".")');
  }
  if (value.subject !== undefined) ack.subject = check.text(value.subject, `${field}.subject`, 998);
  if (value.replyTo !== undefined) {
    const replyTo = typeof value.replyTo === 'string' ? value.replyTo.trim() : '';
    if (isEmail(replyTo)) ack.replyTo = replyTo;
    else check.fail(`${field}.replyTo`, 'must be an email address');
  }
  return ack;
}

function checkSpamProtection(
  value: unknown,
  field: string,
  check: SettingsChecker,
  keptSecret: FormChallenge | undefined,
): FormSpamProtection | undefined {
  if (!check.isObject(value, field)) return undefined;
  const keys = [
    'level',
    'honeypot',
    'rate_limit',
    'content_filter',
    'challenge',
    'altcha_maxnumber',
    'captcha_secret',
    'captcha_secret_set',
    'allowlist',
  ];
  check.unknownKeys(value, keys, field);
  const spam: FormSpamProtection = {};
  if (value.level !== undefined) {
    if (SPAM_PROTECTION_LEVELS.includes(value.level as SpamProtectionLevel)) spam.level = value.level as SpamProtectionLevel;
    else check.fail(`${field}.level`, `must be one of ${SPAM_PROTECTION_LEVELS.join(', ')}`);
  }
  if (value.honeypot !== undefined) spam.honeypot = check.matches(value.honeypot, `${field}.honeypot`, FIELD_NAME, 'a field name');
  if (value.rate_limit !== undefined) spam.rate_limit = check.positiveInt(value.rate_limit, `${field}.rate_limit`, FORM_LIMITS.rateLimit);
  if (value.content_filter !== undefined) spam.content_filter = check.boolean(value.content_filter, `${field}.content_filter`);
  if (value.challenge !== undefined) {
    if (FORM_CHALLENGES.includes(value.challenge as FormChallenge)) spam.challenge = value.challenge as FormChallenge;
    else check.fail(`${field}.challenge`, `must be one of ${FORM_CHALLENGES.join(', ')}`);
  }
  if (value.altcha_maxnumber !== undefined) {
    const { min, max } = ALTCHA_MAX_NUMBER;
    spam.altcha_maxnumber = check.intInRange(value.altcha_maxnumber, `${field}.altcha_maxnumber`, min, max);
  }
  const secretField = `${field}.captcha_secret`;
  const variable = referencedVariable(value.captcha_secret);
  if (value.captcha_secret === null) spam.captcha_secret = null;
  else if (variable) {
    check.fail(
      secretField,
      `is a reference to the environment variable ${variable}: mailroom push replaces it with the variable's value; give the secret itself`,
    );
  } else if (value.captcha_secret !== undefined) spam.captcha_secret = check.text(value.captcha_secret, secretField, 500);
  if (value.captcha_secret_set !== undefined) check.boolean(value.captcha_secret_set, `${field}.captcha_secret_set`);
  if (value.allowlist !== undefined) spam.allowlist = checkAllowlist(value.allowlist, `${field}.allowlist`, check);
  const kept = spam.captcha_secret === undefined && keptSecret === spam.challenge;
  if ((spam.challenge === 'turnstile' || spam.challenge === 'hcaptcha') && !spam.captcha_secret && !kept && !variable) {
    check.fail(secretField, `the ${spam.challenge} site secret is required with challenge ${spam.challenge}`);
  }
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
  if (entries.length > FORM_LIMITS.forms) return check.fail(field, `at most ${FORM_LIMITS.forms} forms`);
  const before = check.errors.length;
  const forms: Record<string, FormSettings> = {};
  for (const [slug, settings] of entries) {
    if (!isSlug(slug)) {
      check.fail(`${field}.${slug}`, `form slug must be ${slugRule()}`);
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
