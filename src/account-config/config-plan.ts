import { mergeUserKeyed, ownValue } from '../common/records';
import type { FieldError } from '../common/settings-checker';
import type { FormSettings } from '../forms/form-settings';
import { AccountConfig, formToFile } from './config-file';

export type ChangeAction = 'create' | 'update' | 'delete';
export type ResourceKind = 'project' | 'settings' | 'domain' | 'forwarding' | 'form' | 'collection' | 'template';

export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

/** One resource the push creates, updates or deletes, named by its path in the file. */
export interface ConfigChange {
  action: ChangeAction;
  kind: ResourceKind;
  path: string;
  changes: FieldChange[];
}

interface Resource {
  kind: ResourceKind;
  fields: Record<string, unknown>;
  /** The path of the resource this one lives in: deleting that deletes this one too. */
  parent?: string;
  /** Says nothing its parent's creation does not: it is not listed when made together with its parent. */
  impliedByParent?: boolean;
}

/**
 * What the account is to look like after pushing `file` onto `current`. Everything the file names is as the file
 * says (a form, template or rule is replaced whole); what it does not name is kept, or deleted when pruning.
 */
export function mergeConfig(current: AccountConfig, file: AccountConfig, prune: boolean): AccountConfig {
  // Keyed by what users name: records without a prototype, read by own keys only (records.ts).
  const keep = <T>(before: Record<string, T>, named: Record<string, T>): Record<string, T> =>
    prune ? mergeUserKeyed(named) : mergeUserKeyed(before, named);
  const domains: AccountConfig['domains'] = mergeUserKeyed(prune ? {} : current.domains);
  for (const [name, domain] of Object.entries(file.domains)) {
    const before = ownValue(current.domains, name);
    domains[name] = {
      ...(domain.contactRecipients ? { contactRecipients: domain.contactRecipients } : {}),
      ...(domain.inboundFiltering ? { inboundFiltering: domain.inboundFiltering } : {}),
      forwarding: keep(before?.forwarding ?? {}, domain.forwarding),
      forms: keep(before?.forms ?? {}, domain.forms),
    };
  }
  const project = file.project ?? (prune ? null : current.project);
  const collections: AccountConfig['collections'] = mergeUserKeyed(prune ? {} : current.collections);
  for (const [slug, collection] of Object.entries(file.collections)) {
    const forms = keep(ownValue(current.collections, slug)?.forms ?? {}, collection.forms);
    collections[slug] = { name: collection.name, project: projectOf(current, file, slug), forms };
  }
  // A project the file does not list is kept while a collection is still in it, even when pruning.
  const projects = keep(current.projects, file.projects);
  for (const { project: slug } of Object.values(collections)) {
    if (slug && !Object.hasOwn(projects, slug) && Object.hasOwn(current.projects, slug)) projects[slug] = current.projects[slug];
  }
  return {
    project,
    projects,
    settings: file.settings ?? (prune ? {} : current.settings),
    domains,
    collections,
    templates: keep(current.templates, file.templates),
  };
}

/**
 * The project a collection of the file is in: the one it names (null: none); else the file's `project`; else, in a
 * file without one, the project it is in already (a new collection: none). Only the file moves a collection.
 */
function projectOf(current: AccountConfig, file: AccountConfig, slug: string): string | null {
  const named = ownValue(file.collections, slug)?.project;
  if (named !== undefined) return named;
  if (file.project) return file.project.slug;
  return ownValue(current.collections, slug)?.project ?? null;
}

/** Each collection of the file that names a project neither the file nor the account has, by its path. */
export function unknownProjects(file: AccountConfig, target: AccountConfig): FieldError[] {
  return Object.entries(file.collections)
    .filter(([, collection]) => collection.project && !Object.hasOwn(target.projects, collection.project))
    .map(([slug, collection]) => ({
      field: `collections.${slug}.project`,
      message: `no project ${collection.project} in the file (project, projects) or the account`,
    }));
}

/** The projects pruning keeps because collections are still in them, each with those collections. */
export function projectsKeptInUse(file: AccountConfig, target: AccountConfig): Map<string, string[]> {
  const kept = new Map<string, string[]>();
  for (const [slug, collection] of Object.entries(target.collections)) {
    const project = collection.project;
    if (!project || Object.hasOwn(file.projects, project)) continue;
    kept.set(project, [...(kept.get(project) ?? []), slug]);
  }
  return kept;
}

/** The changes that turn `current` into `target`, parents before their children, deletions last. */
export function planChanges(current: AccountConfig, target: AccountConfig): ConfigChange[] {
  const before = resourcesOf(current);
  const after = resourcesOf(target);
  const changes: ConfigChange[] = [];
  for (const [path, resource] of after) {
    const old = before.get(path);
    const fields = changedFields(old?.fields ?? {}, resource.fields);
    if (!old) {
      if (!(resource.impliedByParent && resource.parent && !before.has(resource.parent))) {
        changes.push({ action: 'create', kind: resource.kind, path, changes: fields });
      }
    } else if (fields.length > 0) changes.push({ action: 'update', kind: resource.kind, path, changes: fields });
  }
  for (const [path, resource] of before) {
    if (after.has(path) || (resource.parent && !after.has(resource.parent))) continue;
    changes.push({ action: 'delete', kind: resource.kind, path, changes: changedFields(resource.fields, {}) });
  }
  return changes;
}

/** Every resource of a configuration by its path in the file. */
function resourcesOf(config: AccountConfig): Map<string, Resource> {
  const resources = new Map<string, Resource>();
  // `project` is which of the account's projects the file's collections belong to: one project made from the file is one line.
  if (config.project) {
    const { slug } = config.project;
    resources.set('project', { kind: 'project', fields: { slug }, parent: `projects.${slug}`, impliedByParent: true });
  }
  for (const [slug, name] of Object.entries(config.projects)) resources.set(`projects.${slug}`, { kind: 'project', fields: { name } });
  const limits = config.settings?.global_limits;
  if (limits) resources.set('settings.global_limits', { kind: 'settings', fields: { ...limits } });
  const addForms = (parent: string, forms: Record<string, FormSettings>) => {
    for (const [slug, settings] of Object.entries(forms)) {
      resources.set(`${parent}.forms.${slug}`, { kind: 'form', fields: formToFile(settings), parent });
    }
  };
  for (const [name, domain] of Object.entries(config.domains)) {
    const path = `domains.${name}`;
    const fields = {
      ...(domain.contactRecipients ? { contactRecipients: domain.contactRecipients } : {}),
      ...(domain.inboundFiltering ? { inboundFiltering: domain.inboundFiltering } : {}),
    };
    resources.set(path, { kind: 'domain', fields });
    for (const [alias, destinations] of Object.entries(domain.forwarding)) {
      resources.set(`${path}.forwarding.${alias}`, { kind: 'forwarding', fields: { to: destinations }, parent: path });
    }
    addForms(path, domain.forms);
  }
  for (const [slug, collection] of Object.entries(config.collections)) {
    const path = `collections.${slug}`;
    resources.set(path, { kind: 'collection', fields: { name: collection.name, project: collection.project } });
    addForms(path, collection.forms);
  }
  for (const [name, template] of Object.entries(config.templates)) {
    resources.set(`templates.${name}`, { kind: 'template', fields: { ...template } });
  }
  return resources;
}

function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): FieldChange[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return names
    .filter((field) => canonical(ownValue(before, field)) !== canonical(ownValue(after, field)))
    .map((field) => ({ field, before: ownValue(before, field) ?? null, after: ownValue(after, field) ?? null }));
}

/** JSON with object keys sorted: two values are equal when these are. */
export function canonical(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
