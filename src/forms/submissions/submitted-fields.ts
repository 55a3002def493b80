import { AppException } from '../../common/errors/app.exception';
import { unstorableText } from '../../common/http/storable-text';
import { ownValue, userKeyed } from '../../common/records';
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

/** The parts of an upload that are stored as posted: the name of its field, and its name (before cleaning). */
export interface PostedFile {
  fieldname: string;
  originalname: string;
}

/**
 * The fields of a body, whatever its encoding: JSON values become text, nested objects (url-encoded `a[b]=c`,
 * JSON objects) dotted names, repeated names (checkboxes) lists of text. Names starting with `_` are control
 * fields. Widgets' own fields (`altcha`, `cf-turnstile-response`, `h-captcha-response`) and Web3Forms' `botcheck`
 * count as control too. Text PostgreSQL cannot store (NUL, an unpaired surrogate) in any name or value, the
 * uploads' included, is a 400 naming the field: the submission routes take no DTO, so the validation pipe does
 * not see their bodies.
 */
export function parseSubmittedFields(body: unknown, files: readonly PostedFile[] = []): ParsedSubmission {
  checkStorable(body, files);
  // Field names are the poster's: `constructor` or `__proto__` must be a field like any other, not Object.prototype's.
  const fields: SubmittedFields = userKeyed();
  const control: ControlFields = { all: userKeyed() };
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
  control.cc = ccAddresses(control.all._cc);
  if (control.all._format?.trim().toLowerCase() === 'plain') control.format = 'plain';
  control.language = languageTag(control.all._language);
  return { fields, control };
}

/** Control fields without the `_`: the widgets' tokens, and Web3Forms' honeypot checkbox (see spam-filter.ts). */
const CONTROL_NAMES = new Set(['altcha', 'cf-turnstile-response', 'h-captcha-response', 'g-recaptcha-response', 'botcheck']);

export function isControl(name: string): boolean {
  return name.startsWith('_') || CONTROL_NAMES.has(name);
}

/** More than a form may allow (FORM_LIMITS.recipients): the rest of a long `_cc` is not read. */
const MAX_CC = 50;

/**
 * `_cc` as Formspree takes it: addresses separated by commas, semicolons or spaces, in one field or repeated;
 * each once (case aside). Whether they get a copy is the form's decision (its ccAllowed), not the poster's.
 */
function ccAddresses(posted: string | undefined): string[] | undefined {
  if (!posted) return undefined;
  const seen = new Set<string>();
  const addresses = posted.split(/[\s,;]+/).filter((address) => {
    const key = address.toLowerCase();
    if (!address || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return addresses.length ? addresses.slice(0, MAX_CC) : undefined;
}

/** A language tag as `_language` may give it (`de`, `pt-BR`, `zh_Hant`); anything else is ignored. */
function languageTag(posted: string | undefined): string | undefined {
  const tag = posted?.trim();
  return tag && /^[A-Za-z0-9_-]{1,35}$/.test(tag) ? tag : undefined;
}

function checkStorable(body: unknown, files: readonly PostedFile[]): void {
  const problems = [
    ...unstorableText(body, ''),
    ...files.flatMap(({ fieldname, originalname }) =>
      unstorableText({ [fieldname]: originalname }, '').map((p) =>
        p.message.startsWith('name ') ? p : { ...p, message: `file name ${p.message}` },
      ),
    ),
  ];
  if (problems.length) throw AppException.validation(problems.slice(0, 20).map((p) => ({ field: p.field || 'body', message: p.message })));
}

function textOf(name: string, value: unknown): string {
  const text =
    typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  if (text.length > FIELD_LIMITS.valueLength) throw AppException.invalidField(name, `at most ${FIELD_LIMITS.valueLength} characters`);
  return text;
}

/** A field's text: the first value of a repeated one, trimmed; undefined when absent or empty. */
export function fieldText(fields: SubmittedFields, name: string): string | undefined {
  const value = ownValue(fields, name);
  const first = Array.isArray(value) ? value[0] : value;
  const trimmed = first?.trim();
  return trimmed ? trimmed : undefined;
}
