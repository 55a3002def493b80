import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';
import { referencedVariable } from '../forms/spam/secret-reference';

/** Environment variables by name, as process.env holds them. */
export type Environment = Record<string, string | undefined>;

/**
 * Reads a configuration file, YAML or JSON (JSON is YAML), puts each template's `html_file` content in its `html`,
 * the path taken relative to the file, and each secret written as `${NAME}` (forms' captcha_secret, as `GET /config`
 * exports them) replaced by that variable of `environment`. Throws a message naming the file and what is wrong, or
 * every variable that is not set.
 */
export async function readConfigFile(path: string, environment: Environment = {}): Promise<Record<string, unknown>> {
  let source: string;
  try {
    source = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`Cannot read ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`, {
      cause: err,
    });
  }
  let file: unknown;
  try {
    file = parse(source, { prettyErrors: true });
  } catch (err) {
    throw new Error(`${path} is not valid YAML or JSON: ${(err as Error).message}`, { cause: err });
  }
  if (file === null || file === undefined) return {};
  if (typeof file !== 'object' || Array.isArray(file))
    throw new Error(`${path} must hold a mapping of sections (project, projects, domains, collections, templates, settings)`);
  await inlineHtmlFiles(file as Record<string, unknown>, dirname(resolve(path)));
  resolveSecretReferences(file as Record<string, unknown>, environment);
  return file as Record<string, unknown>;
}

/**
 * Replaces each form's `captcha_secret: ${NAME}` by the value of NAME. Only there: elsewhere `${…}` is text the
 * file means (a template's script, a subject). Every reference to a variable that is not set (or empty) is named
 * in one error, before anything is sent.
 */
export function resolveSecretReferences(file: Record<string, unknown>, environment: Environment): void {
  const missing: string[] = [];
  for (const section of ['domains', 'collections']) {
    for (const [owner, entry] of entries(file[section])) {
      for (const [slug, form] of entries(record(entry)?.forms)) {
        const spam = record(record(form)?.spam_protection);
        const variable = referencedVariable(spam?.captcha_secret);
        if (!spam || !variable) continue;
        const value = environment[variable];
        if (value) spam.captcha_secret = value;
        else missing.push(`${variable} (${section}.${owner}.forms.${slug}.spam_protection.captcha_secret)`);
      }
    }
  }
  if (missing.length > 0) {
    throw new Error(
      `The file refers to environment variables that are not set: ${missing.join(', ')}. ` +
        'Set them (the secrets themselves) where mailroom runs; nothing was sent.',
    );
  }
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function entries(value: unknown): [string, unknown][] {
  return Object.entries(record(value) ?? {});
}

async function inlineHtmlFiles(file: Record<string, unknown>, baseDir: string): Promise<void> {
  const templates = file.templates;
  if (!templates || typeof templates !== 'object') return;
  for (const [name, template] of Object.entries(templates as Record<string, unknown>)) {
    if (!template || typeof template !== 'object') continue;
    const entry = template as Record<string, unknown>;
    if (typeof entry.html_file !== 'string') continue;
    if (entry.html !== undefined) throw new Error(`templates.${name}: give html or html_file, not both`);
    const htmlPath = resolve(baseDir, entry.html_file);
    try {
      entry.html = await readFile(htmlPath, 'utf8');
    } catch (err) {
      throw new Error(`templates.${name}.html_file: cannot read ${htmlPath}: ${(err as Error).message}`, { cause: err });
    }
    delete entry.html_file;
  }
}
