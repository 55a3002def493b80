/**
 * `${NAME}`: how a configuration file names a secret it does not hold. `GET /config` writes CAPTCHA secrets so, and
 * `mailroom push` replaces each with the value of that environment variable before sending the file.
 */
const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** The variable `value` refers to, or null when it is not a `${NAME}` reference. */
export function referencedVariable(value: unknown): string | null {
  return typeof value === 'string' ? (ENV_REFERENCE.exec(value)?.[1] ?? null) : null;
}

export function envReference(name: string): string {
  return `\${${name}}`;
}
