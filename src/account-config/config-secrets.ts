import type { FormSettings } from '../forms/form-settings';
import { isCaptchaProvider } from '../forms/spam/captcha-secret';
import { envReference } from '../forms/spam/secret-reference';
import type { AccountConfig } from './config-file';

/**
 * The configuration file holds no secret: `GET /config` writes each form's CAPTCHA secret as a `${NAME}` reference
 * that `mailroom push` fills from its environment, and a plan shows that a secret is set or changes, never its value.
 * Both work on an AccountConfig whose secrets are in clear (the account's opened, or a file's as pushed).
 */

/** How a plan shows a secret: the stored one, or one the push would replace it with. */
export const SECRET_IN_PLAN = { set: '(secret)', changed: '(new secret)' } as const;

interface SecretPlace {
  /** The form's path in the file: `domains.example.com.forms.contact`. */
  path: string;
  /** The domain's name or the collection's slug, and the form's slug. */
  owner: string;
  slug: string;
  settings: FormSettings;
  secret: string;
}

/**
 * The variable each form's secret is exported as, by the form's path. Per provider, `TURNSTILE_SECRET` and
 * `HCAPTCHA_SECRET` when every form of that provider has the same secret (one widget, the usual case); when they
 * differ, each form gets its own, `TURNSTILE_SECRET_<DOMAIN OR COLLECTION>_<FORM>`, so that a push cannot give one
 * form another's secret. A secret kept beside no CAPTCHA challenge is `CAPTCHA_SECRET…` the same way.
 */
export function secretVariables(config: AccountConfig): Map<string, string> {
  const byProvider = new Map<string, SecretPlace[]>();
  for (const place of secretPlaces(config)) {
    const challenge = place.settings.spam_protection?.challenge;
    const provider = isCaptchaProvider(challenge) ? challenge.toUpperCase() : 'CAPTCHA';
    byProvider.set(provider, [...(byProvider.get(provider) ?? []), place]);
  }
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const [provider, places] of byProvider) {
    const shared = new Set(places.map((place) => place.secret)).size === 1;
    for (const place of places) {
      const base = shared ? `${provider}_SECRET` : `${provider}_SECRET_${envName(place.owner)}_${envName(place.slug)}`;
      let name = base;
      // Two owners can give one name (a-b.com and a.b.com): the later one, in file order, is numbered.
      for (let n = 2; !shared && taken.has(name); n++) name = `${base}_${n}`;
      taken.add(name);
      names.set(place.path, name);
    }
  }
  return names;
}

/** The configuration with each CAPTCHA secret replaced by its `${NAME}` reference: what `GET /config` exports. */
export function withSecretReferences(config: AccountConfig): AccountConfig {
  const names = secretVariables(config);
  return replaceSecrets(config, (path) => envReference(names.get(path)!));
}

/**
 * Both sides of a plan with the secrets replaced by what the plan may show: `(secret)`, or `(new secret)` where the
 * target's differs from the current one. A form whose secret is unchanged shows no change; one whose secret changes
 * is an update of spam_protection, without either value.
 */
export function redactSecrets(current: AccountConfig, target: AccountConfig): [AccountConfig, AccountConfig] {
  const before = new Map(secretPlaces(current).map((place) => [place.path, place.secret]));
  const shown = (path: string, secret: string) => {
    const stored = before.get(path);
    return stored === undefined || stored === secret ? SECRET_IN_PLAN.set : SECRET_IN_PLAN.changed;
  };
  return [replaceSecrets(current, () => SECRET_IN_PLAN.set), replaceSecrets(target, shown)];
}

function secretPlaces(config: AccountConfig): SecretPlace[] {
  const places: SecretPlace[] = [];
  const add = (parent: string, owner: string, forms: Record<string, FormSettings>) => {
    for (const [slug, settings] of Object.entries(forms)) {
      const secret = settings.spam_protection?.captcha_secret;
      if (secret) places.push({ path: `${parent}.forms.${slug}`, owner, slug, settings, secret });
    }
  };
  for (const [name, domain] of Object.entries(config.domains)) add(`domains.${name}`, name, domain.forms);
  for (const [slug, collection] of Object.entries(config.collections)) add(`collections.${slug}`, slug, collection.forms);
  return places;
}

/** A copy of `config` whose forms' secrets are `replace(path, secret)`; everything else shared. */
function replaceSecrets(config: AccountConfig, replace: (path: string, secret: string) => string): AccountConfig {
  const forms = (parent: string, map: Record<string, FormSettings>) =>
    Object.fromEntries(
      Object.entries(map).map(([slug, settings]) => {
        const spam = settings.spam_protection;
        if (!spam?.captcha_secret) return [slug, settings];
        return [
          slug,
          { ...settings, spam_protection: { ...spam, captcha_secret: replace(`${parent}.forms.${slug}`, spam.captcha_secret) } },
        ];
      }),
    );
  const domains = Object.fromEntries(
    Object.entries(config.domains).map(([name, domain]) => [name, { ...domain, forms: forms(`domains.${name}`, domain.forms) }]),
  );
  const collections = Object.fromEntries(
    Object.entries(config.collections).map(([slug, collection]) => [
      slug,
      { ...collection, forms: forms(`collections.${slug}`, collection.forms) },
    ]),
  );
  return { ...config, domains, collections };
}

/** A name's part of an environment variable: upper case, every run of other characters one `_`. */
function envName(text: string): string {
  return text
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}
