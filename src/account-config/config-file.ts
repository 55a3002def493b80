import { ownValue, userKeyed, userKeyedFrom } from '../common/records';
import { FieldError, isSlug, SettingsChecker, SLUG_PATTERN, slugRule } from '../common/settings-checker';
import { checkForwarding, checkInboundFiltering, DOMAIN_LIMITS, InboundFiltering } from '../domains/domain-settings';
import { normalizeDomainName } from '../domains/domain-name';
import { CONTACT_FORM_SLUG } from '../forms/form.entity';
import { checkFormMap, FormSettings } from '../forms/form-settings';
import { GLOBAL_LIMIT_FIELDS, GlobalLimits, MAX_QUOTA_VALUE } from '../quotas/quota-policy';
import { TEMPLATE_TYPES, TemplateType } from '../templates/template.entity';
import { TEMPLATE_NAME_PATTERN } from '../templates/templates.service';

/**
 * An account's configuration as the declarative file describes it (spec: project, domains with forwarding and
 * forms, collections, templates, settings), normalized: what `GET /config` exports and `PUT /config` compares.
 */
export interface AccountConfig {
  /** The project the file describes: the project of each collection that does not name its own. */
  project: ProjectConfig | null;
  /** Every project by slug → name: the account's, or the file's `project` and `projects` section. */
  projects: Record<string, string>;
  /** Null when the file has no settings section (kept unless pruning). */
  settings: SettingsConfig | null;
  domains: Record<string, DomainConfig>;
  collections: Record<string, CollectionConfig>;
  templates: Record<string, TemplateConfig>;
}

export interface ProjectConfig {
  slug: string;
  name: string;
}

export interface SettingsConfig {
  global_limits?: GlobalLimits;
}

export interface DomainConfig {
  contactRecipients?: string[];
  /** alias → destinations. */
  forwarding: Record<string, string[]>;
  /** Spam threshold and attachment types of forwarded mail, as PUT /domains/{domain} takes them. */
  inboundFiltering?: InboundFiltering;
  /** slug → settings; never the contact form `send`, which is `contactRecipients`. */
  forms: Record<string, FormSettings>;
}

export interface CollectionConfig {
  name: string;
  /**
   * Slug of the collection's project, null for none. Undefined only in a checked file whose collection does not
   * say: it is then in the file's `project`, or without one stays where it is (mergeConfig).
   */
  project?: string | null;
  forms: Record<string, FormSettings>;
}

export interface TemplateConfig {
  type: TemplateType;
  subject: string;
  description?: string;
  text?: string;
  html?: string;
  /** Values every rendering sees unless the caller gives its own. */
  variables?: Record<string, unknown>;
}

export const CONFIG_SECTIONS = ['project', 'projects', 'domains', 'collections', 'templates', 'settings'] as const;
const DOMAIN_KEYS = ['contactRecipients', 'forwarding', 'inboundFiltering', 'forms'];
const COLLECTION_KEYS = ['name', 'project', 'forms'];
const TEMPLATE_KEYS = ['type', 'description', 'subject', 'text', 'html', 'html_file', 'variables'];

export const CONFIG_LIMITS = {
  projects: 200,
  domains: 200,
  collections: 200,
  templates: 500,
  /** Bytes of one template part, as the templates API takes them. */
  templatePart: 512 * 1024,
} as const;

/** Sections keyed by what users name (a project or collection `constructor`, a template `toString`): no prototype. */
export function emptyConfig(): AccountConfig {
  return { project: null, projects: userKeyed(), settings: null, domains: userKeyed(), collections: userKeyed(), templates: userKeyed() };
}

/**
 * Checks a configuration file (parsed YAML or JSON) and normalizes it. Every problem is collected with its path in
 * the file (`domains.example.com.forms.contact.to`); the config holds what is valid, so later checks can add theirs.
 */
export function checkConfigFile(file: unknown): { config: AccountConfig; errors: FieldError[] } {
  const check = new SettingsChecker();
  const config = emptyConfig();
  if (!isRecord(file)) {
    check.fail('(file)', `must be an object with the sections ${CONFIG_SECTIONS.join(', ')}`);
    return { config, errors: check.errors };
  }
  for (const key of Object.keys(file)) {
    if (!(CONFIG_SECTIONS as readonly string[]).includes(key)) check.fail(key, `unknown section; allowed: ${CONFIG_SECTIONS.join(', ')}`);
  }
  if (file.project != null) config.project = checkProject(file.project, check);
  config.projects = checkKeyed(file.projects, 'projects', CONFIG_LIMITS.projects, check, checkProjectEntry);
  if (config.project) {
    const { slug, name } = config.project;
    const listed = ownValue(config.projects, slug);
    if (listed !== undefined && listed !== name) check.fail(`projects.${slug}.name`, `differs from project.name (${name})`);
    config.projects = userKeyedFrom([[slug, name], ...Object.entries(config.projects)]);
  }
  if (file.settings != null) config.settings = checkSettings(file.settings, check);
  config.domains = checkKeyed(file.domains, 'domains', CONFIG_LIMITS.domains, check, checkDomainEntry);
  config.collections = checkKeyed(file.collections, 'collections', CONFIG_LIMITS.collections, check, checkCollectionEntry);
  config.templates = checkKeyed(file.templates, 'templates', CONFIG_LIMITS.templates, check, checkTemplateEntry);
  return { config, errors: check.errors };
}

type EntryChecker<T> = (key: string, value: unknown, field: string, check: SettingsChecker) => [string, T] | undefined;

/** A section keyed by name (projects, domains, collections, templates): each entry checked, duplicate keys after normalizing refused. */
function checkKeyed<T>(section: unknown, field: string, max: number, check: SettingsChecker, entry: EntryChecker<T>): Record<string, T> {
  const out = userKeyed<T>();
  if (section == null) return out;
  if (!check.isObject(section, field)) return out;
  const entries = Object.entries(section);
  if (entries.length > max) {
    check.fail(field, `at most ${max} entries`);
    return out;
  }
  for (const [key, value] of entries) {
    const checked = entry(key, value, `${field}.${key}`, check);
    if (!checked) continue;
    const [name, normalized] = checked;
    if (Object.hasOwn(out, name)) check.fail(`${field}.${key}`, `${name} is named twice`);
    else out[name] = normalized;
  }
  return out;
}

function checkProject(value: unknown, check: SettingsChecker): ProjectConfig | null {
  if (!check.isObject(value, 'project')) return null;
  check.unknownKeys(value, ['name', 'slug'], 'project');
  const name = check.text(value.name, 'project.name', 200);
  const slug = check.matches(value.slug, 'project.slug', SLUG_PATTERN, slugRule());
  return name && slug ? { name: name.trim(), slug } : null;
}

/** `projects.<slug>`: `{ name }`, the name alone, or nothing (the name is the slug), as collections. */
const checkProjectEntry: EntryChecker<string> = (slug, value, field, check) => {
  if (!isSlug(slug)) return check.fail(field, `project slug must be ${slugRule()}`);
  if (value == null) return [slug, slug];
  if (typeof value === 'string') {
    const name = check.text(value, field, 200)?.trim();
    return name ? [slug, name] : undefined;
  }
  if (!check.isObject(value, field)) return undefined;
  check.unknownKeys(value, ['name'], field);
  if (value.name == null) return [slug, slug];
  const name = check.text(value.name, `${field}.name`, 200)?.trim();
  return name ? [slug, name] : undefined;
};

function checkSettings(value: unknown, check: SettingsChecker): SettingsConfig {
  if (!check.isObject(value, 'settings')) return {};
  check.unknownKeys(value, ['global_limits'], 'settings');
  const settings: SettingsConfig = {};
  const limits = value.global_limits;
  if (limits == null || !check.isObject(limits, 'settings.global_limits')) return settings;
  check.unknownKeys(limits, GLOBAL_LIMIT_FIELDS, 'settings.global_limits');
  const global: GlobalLimits = {};
  for (const window of GLOBAL_LIMIT_FIELDS) {
    if (limits[window] == null) continue;
    const limit = check.positiveInt(limits[window], `settings.global_limits.${window}`, MAX_QUOTA_VALUE);
    if (limit !== undefined) global[window] = limit;
  }
  if (Object.keys(global).length > 0) settings.global_limits = global;
  return settings;
}

const checkDomainEntry: EntryChecker<DomainConfig> = (key, value, field, check) => {
  const name = normalizeDomainName(key);
  if (!name) return check.fail(field, `not a valid domain name: ${key}`);
  const domain: DomainConfig = { forwarding: {}, forms: {} };
  if (value == null) return [name, domain];
  if (!check.isObject(value, field)) return undefined;
  check.unknownKeys(value, DOMAIN_KEYS, field);
  if (value.contactRecipients != null) {
    const recipients = check.emails(value.contactRecipients, `${field}.contactRecipients`, DOMAIN_LIMITS.contactRecipients);
    if (recipients) domain.contactRecipients = recipients;
  }
  if (value.forwarding != null) domain.forwarding = checkForwarding(value.forwarding, `${field}.forwarding`, check) ?? {};
  if (value.inboundFiltering != null) {
    domain.inboundFiltering = checkInboundFiltering(value.inboundFiltering, `${field}.inboundFiltering`, check);
  }
  if (value.forms != null) {
    const options = { requireRecipients: false, reserved: [CONTACT_FORM_SLUG] };
    domain.forms = checkFormMap(value.forms, `${field}.forms`, check, options) ?? {};
  }
  return [name, domain];
};

const checkCollectionEntry: EntryChecker<CollectionConfig> = (slug, value, field, check) => {
  if (!isSlug(slug)) return check.fail(field, `collection slug must be ${slugRule()}`);
  const collection: CollectionConfig = { name: slug, forms: {} };
  if (value == null) return [slug, collection];
  if (!check.isObject(value, field)) return undefined;
  check.unknownKeys(value, COLLECTION_KEYS, field);
  if (value.name != null) collection.name = check.text(value.name, `${field}.name`, 200)?.trim() ?? slug;
  // `project: null` says "in no project"; a slug must be a project of the file or the account (checked with the account).
  if (value.project === null) collection.project = null;
  else if (value.project !== undefined) collection.project = check.matches(value.project, `${field}.project`, SLUG_PATTERN, slugRule());
  if (value.forms != null) collection.forms = checkFormMap(value.forms, `${field}.forms`, check, { requireRecipients: true }) ?? {};
  return [slug, collection];
};

const checkTemplateEntry: EntryChecker<TemplateConfig> = (name, value, field, check) => {
  if (!TEMPLATE_NAME_PATTERN.test(name)) {
    return check.fail(field, 'template name must be 1-100 letters, digits, _ . or -, starting with a letter or digit');
  }
  if (!check.isObject(value, field)) return undefined;
  check.unknownKeys(value, TEMPLATE_KEYS, field);
  const type = value.type ?? 'form';
  if (!(TEMPLATE_TYPES as readonly unknown[]).includes(type)) check.fail(`${field}.type`, `must be one of ${TEMPLATE_TYPES.join(', ')}`);
  const template: TemplateConfig = { type: type as TemplateType, subject: '' };
  const subject = templatePart(value.subject, `${field}.subject`, check);
  if (subject === undefined) check.fail(`${field}.subject`, 'a template needs a subject');
  else template.subject = subject;
  if (value.description != null) template.description = check.text(value.description, `${field}.description`, 500);
  if (value.html_file != null) {
    check.fail(`${field}.html_file`, 'is read by the command line client, which sends the file’s content as html; send html instead');
  }
  const html = templatePart(value.html, `${field}.html`, check);
  const text = templatePart(value.text, `${field}.text`, check);
  if (html !== undefined) template.html = html;
  if (text !== undefined) template.text = text;
  if (value.html == null && value.text == null && value.html_file == null) check.fail(field, 'a template needs html, html_file or text');
  // Their size is checked with the content (TemplatesService.contentProblems).
  if (value.variables != null && check.isObject(value.variables, `${field}.variables`)) template.variables = value.variables;
  return [name, template];
};

function templatePart(value: unknown, field: string, check: SettingsChecker): string | undefined {
  if (value == null) return undefined;
  if (typeof value !== 'string' || value === '') return check.fail(field, 'must be a non-empty string');
  if (Buffer.byteLength(value) > CONFIG_LIMITS.templatePart) return check.fail(field, `at most ${CONFIG_LIMITS.templatePart / 1024} KB`);
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The configuration in the file's shape, as `GET /config` answers it: empty sections and fields left out, one
 * recipient written as an address rather than a list of one. `projects` lists the projects besides `project`, and a
 * collection names its project (or null) unless it is `project`. Pushing the result back changes nothing.
 */
export function toConfigFile(config: AccountConfig): Record<string, unknown> {
  const file: Record<string, unknown> = {};
  const described = config.project?.slug;
  if (config.project) file.project = { name: config.project.name, slug: config.project.slug };
  const others = Object.entries(config.projects).filter(([slug]) => slug !== described);
  if (others.length > 0) file.projects = Object.fromEntries(others.map(([slug, name]) => [slug, { name }]));
  if (Object.keys(config.domains).length > 0) {
    file.domains = mapValues(config.domains, (domain) =>
      compact({
        contactRecipients: domain.contactRecipients,
        forwarding: nonEmpty(mapValues(domain.forwarding, oneOrList)),
        inboundFiltering: domain.inboundFiltering,
        forms: nonEmpty(mapValues(domain.forms, formToFile)),
      }),
    );
  }
  if (Object.keys(config.collections).length > 0) {
    file.collections = mapValues(config.collections, (collection) => ({
      name: collection.name,
      // null written too: a collection in no project says so.
      ...(collection.project !== described && { project: collection.project ?? null }),
      ...compact({ forms: nonEmpty(mapValues(collection.forms, formToFile)) }),
    }));
  }
  if (Object.keys(config.templates).length > 0) file.templates = mapValues(config.templates, (template) => compact({ ...template }));
  if (config.settings?.global_limits) file.settings = { global_limits: { ...config.settings.global_limits } };
  return file;
}

/** A form's settings as the file writes them: `to` (the spec's name) rather than the stored `recipients`. */
export function formToFile(settings: FormSettings): Record<string, unknown> {
  const { recipients, ...rest } = settings;
  return compact({ ...(recipients ? { to: oneOrList(recipients) } : {}), ...rest });
}

function oneOrList(addresses: string[]): string | string[] {
  return addresses.length === 1 ? addresses[0] : addresses;
}

function mapValues<T, U>(record: Record<string, T>, map: (value: T) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, map(value)]));
}

function nonEmpty<T extends object>(value: T): T | undefined {
  return Object.keys(value).length > 0 ? value : undefined;
}

function compact(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));
}
