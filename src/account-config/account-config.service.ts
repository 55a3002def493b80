import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, IsNull, Not } from 'typeorm';
import { Account } from '../accounts/account.entity';
import { patchAccountSettings } from '../accounts/account-settings';
import { SecretBox } from '../common/crypto/secret-box';
import { ownValue, UserKeyed, userKeyed, userKeyedFrom } from '../common/records';
import { AppException } from '../common/errors/app.exception';
import type { FieldError } from '../common/settings-checker';
import { DomainChanges } from '../domains/domain-changes';
import { Domain } from '../domains/domain.entity';
import { DomainsService } from '../domains/domains.service';
import { Collection } from '../forms/collections/collection.entity';
import { CollectionsService } from '../forms/collections/collections.service';
import { DomainFormsService } from '../forms/domains/domain-forms.service';
import { CONTACT_FORM_SLUG, Form } from '../forms/form.entity';
import type { FormSettings } from '../forms/form-settings';
import { withOpenCaptchaSecret } from '../forms/spam/captcha-secret';
import { Project } from '../projects/project.entity';
import { ProjectsService } from '../projects/projects.service';
import { GLOBAL_LIMIT_FIELDS, parseGlobalLimits } from '../quotas/quota-policy';
import { QuotaService } from '../quotas/quota.service';
import { FORM_TEMPLATE_TYPES, Template } from '../templates/template.entity';
import { TemplatesService } from '../templates/templates.service';
import { AccountConfig, checkConfigFile, emptyConfig, TemplateConfig, toConfigFile } from './config-file';
import { canonical, ConfigChange, mergeConfig, planChanges, projectsKeptInUse, unknownProjects } from './config-plan';
import { redactSecrets, withSecretReferences } from './config-secrets';

export interface PushOptions {
  dryRun: boolean;
  prune: boolean;
}

export interface PushResult {
  applied: boolean;
  dryRun: boolean;
  prune: boolean;
  summary: { create: number; update: number; delete: number };
  changes: ConfigChange[];
  /** What the account has and the file does not name: kept, as the push does not prune. */
  notInFile: string[];
  /** What the user has to do next (a new domain to verify). */
  notes: string[];
}

/** Where accounts.settings keeps which project the file describes. */
const CONFIG_SETTINGS = 'config';
/** What accounts.settings[CONFIG_SETTINGS] holds: the described project's id. */
interface ConfigSettings {
  project: string | null;
}

/**
 * The declarative configuration (D-33): export an account's projects, domains (forwarding, forms), collections (each
 * naming its project), templates and settings as one file, and push a file back as a plan or in one transaction. Each feature's service
 * writes its own rows; this one decides what changes.
 */
@Injectable()
export class AccountConfigService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly domains: DomainsService,
    private readonly domainChanges: DomainChanges,
    private readonly domainForms: DomainFormsService,
    private readonly collections: CollectionsService,
    private readonly projects: ProjectsService,
    private readonly templates: TemplatesService,
    private readonly quotas: QuotaService,
    private readonly secrets: SecretBox,
  ) {}

  /** The file, CAPTCHA secrets written as `${NAME}` references (config-secrets.ts): it is meant for a repository. */
  async export(accountId: string): Promise<Record<string, unknown>> {
    return toConfigFile(withSecretReferences(await this.current(this.dataSource.manager, accountId)));
  }

  /**
   * Plans the file against the account and, unless a dry run, applies the plan in one transaction. Pushes of one
   * account wait for each other (an advisory lock), and each plans against what the one before it left.
   */
  async push(accountId: string, file: unknown, options: PushOptions): Promise<PushResult> {
    if (options.dryRun) return this.plan(this.dataSource.manager, accountId, file, options);
    const result = await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`mailroom:config:${accountId}`]);
      return this.plan(manager, accountId, file, options, true);
    });
    if (result.changes.some((change) => change.kind === 'settings')) this.quotas.accountChanged(accountId);
    // Told once committed: a post told earlier would read (and cache for 10 s) the domains the push removes.
    for (const change of result.changes) {
      if (change.kind === 'domain' && change.action !== 'update') {
        await this.domainChanges.changed(accountId, change.path.slice('domains.'.length));
      }
    }
    return result;
  }

  private async plan(manager: EntityManager, accountId: string, file: unknown, options: PushOptions, apply = false): Promise<PushResult> {
    const { config: desired, errors } = checkConfigFile(file);
    const current = await this.current(manager, accountId);
    const target = mergeConfig(current, desired, options.prune);
    errors.push(...(await this.problemsAgainst(accountId, current, desired, target)));
    if (errors.length > 0) throw AppException.validation(errors);

    // Compared in clear, shown without values: the answer never carries a secret.
    const changes = planChanges(...redactSecrets(current, target));
    if (apply && changes.length > 0) await this.write(manager, accountId, current, target);
    const count = (action: ConfigChange['action']) => changes.filter((change) => change.action === action).length;
    const notInFile = options.prune
      ? []
      : planChanges(current, mergeConfig(current, desired, true))
          .filter((change) => change.action === 'delete')
          .map((change) => change.path);
    return {
      applied: apply,
      dryRun: options.dryRun,
      prune: options.prune,
      summary: { create: count('create'), update: count('update'), delete: count('delete') },
      changes,
      notInFile,
      notes: [...this.notesOn(changes), ...(options.prune ? keptProjectNotes(desired, target) : [])],
    };
  }

  /** What the file's content cannot do in this account: a domain another account verified, bad template content, a missing template. */
  private async problemsAgainst(
    accountId: string,
    current: AccountConfig,
    desired: AccountConfig,
    target: AccountConfig,
  ): Promise<FieldError[]> {
    const problems: FieldError[] = unknownProjects(desired, target);
    const newDomains = Object.keys(desired.domains).filter((name) => !Object.hasOwn(current.domains, name));
    for (const name of await this.domains.verifiedElsewhere(accountId, newDomains)) {
      problems.push({ field: `domains.${name}`, message: 'is verified by another account' });
    }
    for (const [name, template] of Object.entries(desired.templates)) {
      for (const problem of this.templates.contentProblems({ name, ...template })) {
        problems.push({ field: `templates.${name}.${problem.field}`, message: problem.message });
      }
    }
    const formTemplate = (name: string | undefined, field: string) => {
      if (name === undefined) return;
      const template = ownValue(target.templates, name);
      if (!template) problems.push({ field, message: `no template named ${name} in the file or the account` });
      else if (!FORM_TEMPLATE_TYPES.includes(template.type)) {
        problems.push({ field, message: `${name} is an ${template.type} template; forms use form or acknowledgment templates` });
      }
    };
    const checkForms = (parent: string, forms: Record<string, FormSettings>) => {
      for (const [slug, settings] of Object.entries(forms)) {
        formTemplate(settings.template, `${parent}.forms.${slug}.template`);
        formTemplate(settings.acknowledgment?.template, `${parent}.forms.${slug}.acknowledgment.template`);
      }
    };
    for (const [name, domain] of Object.entries(desired.domains)) checkForms(`domains.${name}`, domain.forms);
    for (const [slug, collection] of Object.entries(desired.collections)) checkForms(`collections.${slug}`, collection.forms);
    return problems;
  }

  private notesOn(changes: ConfigChange[]): string[] {
    if (!this.domains.verifiesByDns) return [];
    return changes
      .filter((change) => change.kind === 'domain' && change.action === 'create')
      .map((change) => {
        const name = change.path.slice('domains.'.length);
        return `${name} is pending: publish its DNS records (GET /domains/${name}) and verify it (POST /domains/${name}/verify) before it takes form posts and mail`;
      });
  }

  /** Makes the account look like `target`: every owner whose part differs is written by its own service. */
  private async write(manager: EntityManager, accountId: string, current: AccountConfig, target: AccountConfig): Promise<void> {
    const differs = <T>(before: Record<string, T>, after: Record<string, T>) => ({
      upserts: Object.entries(after).filter(([key, value]) => canonical(ownValue(before, key)) !== canonical(value)),
      removed: Object.keys(before).filter((key) => !Object.hasOwn(after, key)),
    });

    const projects = differs(current.projects, target.projects);
    const projectIds = await this.projects.applyConfig(
      manager,
      accountId,
      projects.upserts.map(([slug, name]) => ({ slug, name })),
      projects.removed,
    );
    const templates = differs(current.templates, target.templates);
    if (templates.upserts.length || templates.removed.length) {
      const upserts = templates.upserts.map(([name, template]) => ({ name, ...template }));
      await this.templates.applyConfig(manager, accountId, upserts, templates.removed);
    }
    const domains = differs(current.domains, target.domains);
    if (domains.upserts.length || domains.removed.length) {
      const upserts = domains.upserts.map(([name, domain]) => ({
        name,
        settings: {
          ...(domain.contactRecipients ? { contactRecipients: domain.contactRecipients } : {}),
          ...(Object.keys(domain.forwarding).length ? { forwarding: domain.forwarding } : {}),
          ...(domain.inboundFiltering ? { inboundFiltering: domain.inboundFiltering } : {}),
        },
        forms: domain.forms,
      }));
      await this.domainForms.applyConfig(manager, accountId, upserts, domains.removed);
    }
    const collections = differs(current.collections, target.collections);
    if (collections.upserts.length || collections.removed.length) {
      const upserts = collections.upserts.map(([slug, collection]) => ({
        slug,
        name: collection.name,
        projectId: collection.project ? (projectIds.get(collection.project) ?? null) : null,
        forms: collection.forms,
      }));
      await this.collections.applyConfig(manager, accountId, upserts, collections.removed);
    }
    const limits = target.settings?.global_limits ?? {};
    await patchAccountSettings(manager, accountId, {
      // Every window given: a limit the target lacks is removed (null), not kept.
      global_limits: Object.fromEntries(GLOBAL_LIMIT_FIELDS.map((window) => [window, limits[window] ?? null])),
      [CONFIG_SETTINGS]: { project: target.project ? (projectIds.get(target.project.slug) ?? null) : null } satisfies ConfigSettings,
    });
  }

  /** The account's configuration as it stands, read in `manager`'s transaction; CAPTCHA secrets opened. */
  private async current(manager: EntityManager, accountId: string): Promise<AccountConfig> {
    const config = emptyConfig();
    const account = await manager.findOneBy(Account, { id: accountId });
    if (!account) throw AppException.notFound('Account', accountId);
    // One after the other: in a transaction they share one connection, which takes one query at a time.
    const projects = await manager.find(Project, { where: { accountId }, order: { createdAt: 'ASC' } });
    const domains = await manager.find(Domain, { where: { accountId }, order: { name: 'ASC' } });
    const collections = await manager.find(Collection, { where: { accountId }, order: { slug: 'ASC' } });
    const forms = await manager.find(Form, {
      where: { accountId, kind: In(['domain', 'collection']), slug: Not(IsNull()) },
      order: { slug: 'ASC' },
    });
    const templates = await manager.find(Template, { where: { accountId }, order: { name: 'ASC' } });

    const projectSlugs = new Map(projects.map((project) => [project.id, project.slug]));
    config.projects = userKeyedFrom(projects.map((project) => [project.slug, project.name]));
    const recorded = account.settings?.[CONFIG_SETTINGS] as ConfigSettings | undefined;
    const configured = projects.find((project) => project.id === recorded?.project);
    if (configured) config.project = { slug: configured.slug, name: configured.name };
    const globalLimits = parseGlobalLimits(account.settings?.global_limits);
    config.settings = Object.keys(globalLimits).length > 0 ? { global_limits: globalLimits } : {};

    const formsOf = new Map<string, UserKeyed<FormSettings>>();
    for (const form of forms) {
      const owner = form.domainId ?? form.collectionId!;
      if (form.domainId && form.slug === CONTACT_FORM_SLUG) continue;
      const owned = formsOf.get(owner) ?? userKeyed<FormSettings>();
      owned[form.slug!] = withOpenCaptchaSecret(this.secrets, form.settings);
      formsOf.set(owner, owned);
    }
    for (const domain of domains) {
      config.domains[domain.name] = {
        ...(domain.settings.contactRecipients ? { contactRecipients: domain.settings.contactRecipients } : {}),
        ...(domain.settings.inboundFiltering ? { inboundFiltering: domain.settings.inboundFiltering } : {}),
        forwarding: domain.settings.forwarding ?? {},
        forms: formsOf.get(domain.id) ?? userKeyed(),
      };
    }
    for (const collection of collections) {
      config.collections[collection.slug] = {
        name: collection.name,
        project: collection.projectId ? (projectSlugs.get(collection.projectId) ?? null) : null,
        forms: formsOf.get(collection.id) ?? userKeyed(),
      };
    }
    for (const template of templates) config.templates[template.name] = templateConfigOf(template);
    return config;
  }
}

/** Why pruning left a project the file does not list: it still holds collections. */
function keptProjectNotes(file: AccountConfig, target: AccountConfig): string[] {
  return [...projectsKeptInUse(file, target)].map(
    ([project, collections]) =>
      `projects.${project} is not in the file but is kept: collections ${collections.join(', ')} are still in it (list it in projects, or move them)`,
  );
}

function templateConfigOf(template: Template): TemplateConfig {
  return {
    type: template.type,
    subject: template.subject,
    ...(template.description !== null && { description: template.description }),
    ...(template.text !== null && { text: template.text }),
    ...(template.html !== null && { html: template.html }),
    ...(template.variables !== null && { variables: template.variables }),
  };
}
