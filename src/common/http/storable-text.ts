/**
 * Text PostgreSQL refuses or silently changes: NUL (U+0000) is refused by `text` and `jsonb` alike, and an
 * unpaired UTF-16 surrogate is refused by `jsonb` (as a `\uD800` escape) and turned into U+FFFD by `text`.
 * Requests are checked for both before any handler runs, so such input is a 400 naming the field instead of a
 * failed query (and, in a group commit, a failed batch of other tenants' rows).
 */
// eslint-disable-next-line no-control-regex -- NUL is the very character this must find
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export interface FieldProblem {
  field: string;
  message: string;
}

/** Enough to show what is wrong without answering a body of 10,000 bad strings with 10,000 entries. */
const MAX_PROBLEMS = 20;

function problemOf(text: string): string | null {
  const found = UNSTORABLE.exec(text);
  if (!found) return null;
  return found[0] === '\u0000' ? 'must not contain NUL (U+0000)' : 'must not contain an unpaired UTF-16 surrogate';
}

/** A property name as it can be shown in a field path: the characters it may not contain, escaped. */
function printable(name: string): string {
  return name.replace(new RegExp(UNSTORABLE.source, 'g'), (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

/**
 * Every string (and property name) in `value` that PostgreSQL would refuse, named by its path from `root`:
 * `text`, `attachments[0].filename`, `restrictions.domain_restrictions[1]`. Walks iteratively, so nesting
 * depth is no concern here (bodies are capped at the parser anyway).
 */
export function unstorableText(value: unknown, root: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  // Each entry: a value, its path, and the property name it was found under (checked when it is visited, so
  // problems come out in document order).
  const pending: [unknown, string, string?][] = [[value, root]];
  while (pending.length > 0 && problems.length < MAX_PROBLEMS) {
    const [current, path, name] = pending.pop()!;
    const nameProblem = name === undefined ? null : problemOf(name);
    if (nameProblem) {
      problems.push({ field: path, message: `name ${nameProblem}` });
    } else if (typeof current === 'string') {
      const message = problemOf(current);
      if (message) problems.push({ field: path, message });
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push([current[i], childPath(path, i)]);
    } else if (current !== null && typeof current === 'object') {
      const entries: [string, unknown][] = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        pending.push([child, childPath(path, printable(key)), key]);
      }
    }
  }
  return problems.slice(0, MAX_PROBLEMS);
}
