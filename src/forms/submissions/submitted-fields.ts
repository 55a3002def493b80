import { AppException } from '../../common/errors/app.exception';
import type { SubmittedFields } from '../form-submission.entity';

/** Limits of one submission's fields: a form is a few dozen fields, never a data dump. */
export const FIELD_LIMITS = { fields: 200, nameLength: 200, valueLength: 100_000, values: 100 } as const;

/** Control fields (D-25): they steer the submission and never appear in the email. */
export interface ControlFields {
  redirect?: string;
  subject?: string;
  replyTo?: string;
  /** `_cc`: addresses the submitter asks to copy, as posted (only those the form's settings allow are used). */
  cc?: string[];
  /** `_format=plain`: the notification is sent as plain text only. */
  format?: 'plain';
  /** `_language`: the language tag the form asks its pages and emails to be in (see i18n/language.ts). */
  language?: string;
  /** Every `_…` field as posted (honeypots, challenge solutions). */
  all: Record<string, string>;
}

export interface ParsedSubmission {
  fields: SubmittedFields;
  control: ControlFields;
}

/**
 * The fields of a body, whatever its encoding: JSON values become text, nested objects (url-encoded `a[b]=c`,
 * JSON objects) dotted names, repeated names (checkboxes) lists of text. Names starting with `_` are control
 * fields. Widgets' own fields (`altcha`, `cf-turnstile-response`, `h-captcha-response`) count as control too.
 */
export function parseSubmittedFields(body: unknown): ParsedSubmission {
  const fields: SubmittedFields = {};
  const control: ControlFields = { all: {} };
  if (body === undefined || body === null || (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)) {
    return { fields, control };
  }
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw AppException.invalidField('body', 'must be form fields: a JSON object, url-encoded or multipart');
  }
  let count = 0;
  const add = (name: string, value: unknown): void => {
    if (++count > FIELD_LIMITS.fields) throw AppException.invalidField('body', `at most ${FIELD_LIMITS.fields} fields`);
    if (name.length > FIELD_LIMITS.nameLength)
      throw AppException.invalidField(name.slice(0, 60), `field names have at most ${FIELD_LIMITS.nameLength} characters`);
    const values = (Array.isArray(value) ? value : [value]).flatMap((v) => (v === null || v === undefined ? [] : [textOf(name, v)]));
    if (values.length > FIELD_LIMITS.values) throw AppException.invalidField(name, `at most ${FIELD_LIMITS.values} values`);
    if (values.length === 0) return;
    if (isControl(name)) {
      control.all[name] = values.join(', ');
      return;
    }
    const previous = fields[name];
    const merged = previous === undefined ? values : [...(Array.isArray(previous) ? previous : [previous]), ...values];
    fields[name] = merged.length === 1 ? merged[0] : merged;
  };
  const walk = (prefix: string, value: unknown): void => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) walk(prefix ? `${prefix}.${key}` : key, inner);
    } else if (Array.isArray(value) && value.some((v) => v !== null && typeof v === 'object')) {
      value.forEach((inner, i) => walk(`${prefix}.${i}`, inner));
    } else {
      add(prefix, value);
    }
  };
  walk('', body);
  control.redirect = control.all._redirect || control.all._next || undefined;
  control.subject = control.all._subject || undefined;
  control.replyTo = control.all._replyto || control.all._replyTo || undefined;
  return { fields, control };
}

const WIDGET_FIELDS = new Set(['altcha', 'cf-turnstile-response', 'h-captcha-response', 'g-recaptcha-response']);

export function isControl(name: string): boolean {
  return name.startsWith('_') || WIDGET_FIELDS.has(name);
}

function textOf(name: string, value: unknown): string {
  const text =
    typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  if (text.length > FIELD_LIMITS.valueLength) throw AppException.invalidField(name, `at most ${FIELD_LIMITS.valueLength} characters`);
  return text;
}

/** A field's text: the first value of a repeated one, trimmed; undefined when absent or empty. */
export function fieldText(fields: SubmittedFields, name: string): string | undefined {
  const value = fields[name];
  const first = Array.isArray(value) ? value[0] : value;
  const trimmed = first?.trim();
  return trimmed ? trimmed : undefined;
}
