import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';

/**
 * Reads a configuration file, YAML or JSON (JSON is YAML), and puts each template's `html_file` content in its
 * `html`, the path taken relative to the file. Throws a message naming the file and what is wrong.
 */
export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
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
    throw new Error(`${path} must hold a mapping of sections (project, domains, collections, templates, settings)`);
  await inlineHtmlFiles(file as Record<string, unknown>, dirname(resolve(path)));
  return file as Record<string, unknown>;
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
