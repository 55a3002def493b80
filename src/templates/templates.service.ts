import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import type { FieldError } from '../common/settings-checker';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { newId } from '../common/ids';
import { renderLiquid } from './liquid-dialect';
import { FORM_TEMPLATE_TYPES, Template, TemplateType } from './template.entity';
import { assertSendable, checkTemplateContent, isFormTemplate } from './template-content';
import { CompiledTemplate, remember, RenderedContent, TemplateRenderer } from './template-renderer';
import { uniqueViolation } from '../common/errors/unique-violation';

export type { RenderedContent } from './template-renderer';

export const TEMPLATE_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,99}$/;

export interface TemplateInput {
  name: string;
  subject: string;
  html?: string | null;
  text?: string | null;
  description?: string | null;
  /** Default `email`. */
  type?: TemplateType;
  /** Default values of the placeholders. */
  variables?: Template['variables'];
}

/** Bytes of a template's default variables as JSON. */
export const TEMPLATE_VARIABLES_LIMIT = 64 * 1024;

/**
 * Stored templates of an account: `email` ones in Handlebars (D-21), `form` and `acknowledgment` ones in the
 * forms' Liquid dialect (D-28). The only writer of templates, and the renderer every sender uses.
 */
@Injectable()
export class TemplatesService {
  private readonly renderer = new TemplateRenderer();
  /** Compiled stored templates by account and name, valid while the row's updatedAt is unchanged. */
  private readonly compiled = new Map<string, { updatedAt: number; template: CompiledTemplate }>();
  private static readonly COMPILED_CACHE_SIZE = 1000;

  constructor(@InjectRepository(Template) private readonly templates: Repository<Template>) {}

  list(accountId: string): Promise<Template[]> {
    return this.templates.find({ where: { accountId }, order: { name: 'ASC' } });
  }

  /** A template of the account by name; 404 for unknown names and other accounts' templates alike. */
  async get(accountId: string, name: string): Promise<Template> {
    const template = await this.templates.findOneBy({ accountId, name });
    if (!template) throw AppException.notFound('Template', name);
    return template;
  }

  /** Saves a new template after compiling it: a syntax error is a 400 naming the part and line. 409 if the name is taken. */
  async create(accountId: string, input: TemplateInput): Promise<Template> {
    const type = input.type ?? 'email';
    this.checkContent({ ...input, type });
    const template = this.templates.create({
      id: newId('tpl'),
      accountId,
      name: input.name,
      type,
      description: input.description ?? null,
      subject: input.subject,
      html: input.html ?? null,
      text: input.text ?? null,
      variables: input.variables ?? null,
    });
    try {
      await this.templates.insert(template);
    } catch (err) {
      if (uniqueViolation(err) === 'UQ_templates_account_name') {
        throw new AppException(ErrorCode.Conflict, `A template named ${input.name} exists already`);
      }
      throw err;
    }
    return this.get(accountId, input.name);
  }

  /**
   * Replaces a template's content (PUT). Fields left out keep their stored value; html or text set to null
   * removes that part, as long as one of them remains. A new name renames it (409 if taken). A new type checks the
   * content in that type's language.
   */
  async update(accountId: string, name: string, changes: Partial<TemplateInput>): Promise<Template> {
    const template = await this.get(accountId, name);
    const next: TemplateInput & { type: TemplateType } = {
      name: changes.name ?? template.name,
      subject: changes.subject ?? template.subject,
      html: changes.html === undefined ? template.html : changes.html,
      text: changes.text === undefined ? template.text : changes.text,
      description: changes.description === undefined ? template.description : changes.description,
      type: changes.type ?? template.type,
      variables: changes.variables === undefined ? template.variables : changes.variables,
    };
    this.checkContent(next);
    try {
      await this.templates.update(
        { id: template.id, accountId },
        {
          name: next.name,
          type: next.type,
          subject: next.subject,
          html: next.html ?? null,
          text: next.text ?? null,
          description: next.description ?? null,
          variables: next.variables ?? null,
        },
      );
    } catch (err) {
      if (uniqueViolation(err) === 'UQ_templates_account_name') {
        throw new AppException(ErrorCode.Conflict, `A template named ${next.name} exists already`);
      }
      throw err;
    }
    this.compiled.delete(cacheKey(accountId, name));
    return this.get(accountId, next.name);
  }

  async remove(accountId: string, name: string): Promise<Template> {
    const template = await this.get(accountId, name);
    await this.templates.delete({ id: template.id, accountId });
    this.compiled.delete(cacheKey(accountId, name));
    return template;
  }

  /**
   * Renders the stored email template `name` of the account for a send (404 NOT_FOUND if none; 400 on `template`
   * if it is a form template).
   */
  async render(accountId: string, name: string, variables: Record<string, unknown>): Promise<RenderedContent> {
    const template = await this.get(accountId, name);
    assertSendable(template);
    return this.renderer.render(this.compiledOf(template), withDefaults(template, variables), `template ${name}`);
  }

  /** Renders any stored template as its type would be sent; for a form template the variables are the Liquid context. */
  async preview(accountId: string, name: string, variables: Record<string, unknown>): Promise<RenderedContent> {
    const template = await this.get(accountId, name);
    if (isFormTemplate(template.type)) return renderLiquid(template, withDefaults(template, variables));
    return this.renderer.render(this.compiledOf(template), withDefaults(template, variables), `template ${name}`);
  }

  /** A form or acknowledgment template of the account, for the forms pipeline; null for unknown names and email templates. */
  findForForm(accountId: string, name: string): Promise<Template | null> {
    return this.templates.findOneBy({ accountId, name, type: In([...FORM_TEMPLATE_TYPES]) });
  }

  /**
   * Renders inline content as a template (list and batch sends that pass subject/html/text). A send without a
   * stored template is not templated: callers use this only where templating inline content is the rule.
   */
  renderContent(content: { subject: string; html?: string; text?: string }, variables: Record<string, unknown>): RenderedContent {
    return this.renderer.renderContent(content, variables ?? {});
  }

  private compiledOf(template: Template): CompiledTemplate {
    const key = cacheKey(template.accountId, template.name);
    const updatedAt = template.updatedAt.getTime();
    const cached = this.compiled.get(key);
    if (cached && cached.updatedAt === updatedAt) return cached.template;
    const compiled = this.renderer.compile(template);
    remember(this.compiled, key, { updatedAt, template: compiled }, TemplatesService.COMPILED_CACHE_SIZE);
    return compiled;
  }

  /** What is wrong with a template's content, each problem naming its part (`html`, `subject`, `variables`); empty when it is fine. */
  contentProblems(input: TemplateInput & { type: TemplateType }): FieldError[] {
    try {
      this.checkContent(input);
      return [];
    } catch (err) {
      const fields = err instanceof AppException ? (err.details?.fields as FieldError[] | undefined) : undefined;
      if (fields) return fields;
      throw err;
    }
  }

  /**
   * Writes templates checked already (contentProblems) in the caller's transaction: those named are created or
   * replaced whole, `remove` ones deleted. The declarative configuration's writer of templates.
   */
  async applyConfig(
    manager: EntityManager,
    accountId: string,
    upserts: (TemplateInput & { type: TemplateType })[],
    remove: string[],
  ): Promise<void> {
    const repository = manager.getRepository(Template);
    if (remove.length) await repository.delete({ accountId, name: In(remove) });
    const existing = new Map(
      (await repository.find({ where: { accountId }, select: { id: true, name: true } })).map((t) => [t.name, t.id]),
    );
    const fieldsOf = (input: TemplateInput & { type: TemplateType }) => ({
      type: input.type,
      description: input.description ?? null,
      subject: input.subject,
      html: input.html ?? null,
      text: input.text ?? null,
      variables: input.variables ?? null,
    });
    const added = upserts.filter((input) => !existing.has(input.name));
    if (added.length)
      await repository.insert(added.map((input) => ({ id: newId('tpl'), accountId, name: input.name, ...fieldsOf(input) })));
    for (const input of upserts) {
      const id = existing.get(input.name);
      if (id) await repository.update({ id, accountId }, fieldsOf(input));
    }
    for (const name of [...remove, ...upserts.map((t) => t.name)]) this.compiled.delete(cacheKey(accountId, name));
  }

  private checkContent(input: TemplateInput & { type: TemplateType }): void {
    if (!TEMPLATE_NAME_PATTERN.test(input.name)) {
      throw AppException.invalidField('name', 'must be 1-100 letters, digits, _ . or -, starting with a letter or digit');
    }
    if (!input.html && !input.text) throw AppException.invalidField('html', 'a template needs html or text (or both)');
    if (input.variables && JSON.stringify(input.variables).length > TEMPLATE_VARIABLES_LIMIT) {
      throw AppException.invalidField('variables', `at most ${TEMPLATE_VARIABLES_LIMIT / 1024} KB as JSON`);
    }
    checkTemplateContent(input.type, { subject: input.subject, html: input.html, text: input.text }, this.renderer);
  }
}

/** A template's default variables under the caller's own. */
function withDefaults(template: Template, variables: Record<string, unknown> | undefined): Record<string, unknown> {
  return template.variables ? { ...template.variables, ...variables } : (variables ?? {});
}

function cacheKey(accountId: string, name: string): string {
  return `${accountId}\u0000${name}`;
}
