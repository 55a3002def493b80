import { isEmail } from 'class-validator';

export interface FieldError {
  field: string;
  message: string;
}

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** A display name the configuration file can hold: one line, not blank. */
export const ONE_LINE_NAME = /^[^\r\n]*\S[^\r\n]*$/;
export const ONE_LINE_NAME_MESSAGE = 'name must be one line of text, not blank';
const SLUG_RULE = '1-63 lower-case letters, digits, "-" or "_", starting with a letter or digit';

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
    return this.intInRange(value, field, 1, max);
  }

  intInRange(value: unknown, field: string, min: number, max: number): number | undefined {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      return this.fail(field, `must be a whole number from ${min} to ${max}`);
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
