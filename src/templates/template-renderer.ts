import { createHash } from 'node:crypto';
import Handlebars from 'handlebars';
import { AppException } from '../common/errors/app.exception';

/** The parts of an email a template renders; subject is always there, html and/or text. */
export interface TemplateContent {
  subject: string;
  html?: string | null;
  text?: string | null;
}

export interface RenderedContent {
  subject: string;
  html?: string;
  text?: string;
}

export type TemplatePart = 'subject' | 'html' | 'text';

/** A template whose parts are compiled, ready to render many times. */
export interface CompiledTemplate {
  subject: HandlebarsTemplateDelegate;
  html?: HandlebarsTemplateDelegate;
  text?: HandlebarsTemplateDelegate;
}

/** Upper bound of each part's source, in UTF-8 bytes: keeps compile time and memory of one template bounded. */
export const MAX_TEMPLATE_PART_BYTES = 512 * 1024;

/** Loop iterations one render may run, all sections and #each together. */
export const MAX_LOOP_ITERATIONS = 100_000;
/** Output the sections of one render may produce, counted at every nesting level. */
export const MAX_RENDERED_BYTES = 20 * 1024 * 1024;

/** Prototype access stays denied (Handlebars' default); saying so explicitly also stops a console warning per name. */
const RUNTIME_OPTIONS: RuntimeOptions = { allowProtoPropertiesByDefault: false, allowProtoMethodsByDefault: false };

/** Builtin helpers and how many positional arguments each takes. */
const BUILTIN_ARITY: Record<string, [min: number, max: number]> = {
  if: [1, 1],
  unless: [1, 1],
  each: [1, 1],
  with: [1, 1],
  lookup: [2, 2],
};

/**
 * Compiles and renders Handlebars email templates (D-21) with the rules every caller shares:
 * - mustache sections and loops `{{#items}}…{{/items}}` work, and names not found in a loop item are looked
 *   up in the enclosing scopes like Mustache does (`compat`);
 * - values are HTML-escaped in the html part only; subject and text render verbatim;
 * - `subject` (the rendered subject) and `unsubscribeUrl` (the sender's value or '') are always defined;
 * - only the builtin helpers if, unless, each, with and lookup exist; partials and decorators are refused;
 *   prototype properties stay unreachable (Handlebars' default);
 * - loops and output of one render are bounded, so a small template cannot hold the event loop;
 * - every mistake that can be found before rendering is found by compile(), naming the part and the line.
 */
export class TemplateRenderer {
  private readonly handlebars = Handlebars.create();
  /** Inline content (list and batch sends) compiled once per distinct source, bounded. */
  private readonly inlineCache = new Map<string, CompiledTemplate>();

  /** What the render in progress may still spend; rendering is synchronous, so one counter per renderer is enough. */
  private budget = { iterations: 0, bytes: 0 };

  constructor(private readonly inlineCacheSize = 200) {
    this.meterLoops();
  }

  /** Compiles every part now; a problem is a 400 VALIDATION_FAILED listing each bad part and its line. */
  compile(content: TemplateContent): CompiledTemplate {
    const problems: { field: TemplatePart; message: string }[] = [];
    const compiled: Partial<CompiledTemplate> = {};
    for (const part of ['subject', 'html', 'text'] as const) {
      const source = content[part];
      if (source === undefined || source === null) continue;
      try {
        compiled[part] = this.compilePart(part, source);
      } catch (err) {
        problems.push({ field: part, message: describeCompileError(err) });
      }
    }
    if (problems.length > 0) throw AppException.validation(problems);
    return compiled as CompiledTemplate;
  }

  /** Renders compiled parts with the sender's variables. A failure while rendering is a 400 naming the part. */
  render(template: CompiledTemplate, variables: Record<string, unknown>, label = 'template'): RenderedContent {
    const unsubscribeUrl = typeof variables.unsubscribeUrl === 'string' ? variables.unsubscribeUrl : '';
    const subject = singleLine(this.run(template.subject, { ...variables, unsubscribeUrl }, 'subject', label));
    const context = { ...variables, subject, unsubscribeUrl };
    const rendered: RenderedContent = { subject };
    if (template.html) rendered.html = this.run(template.html, context, 'html', label);
    if (template.text) rendered.text = this.run(template.text, context, 'text', label);
    return rendered;
  }

  /** Compiles (or reuses) and renders inline content in one step. */
  renderContent(content: TemplateContent, variables: Record<string, unknown>): RenderedContent {
    const key = createHash('sha256')
      .update(JSON.stringify([content.subject, content.html ?? null, content.text ?? null]))
      .digest('base64');
    let compiled = this.inlineCache.get(key);
    if (!compiled) {
      compiled = this.compile(content);
      remember(this.inlineCache, key, compiled, this.inlineCacheSize);
    }
    return this.render(compiled, variables, 'content');
  }

  private compilePart(part: TemplatePart, source: string): HandlebarsTemplateDelegate {
    if (Buffer.byteLength(source, 'utf8') > MAX_TEMPLATE_PART_BYTES) {
      throw new Error(`longer than ${MAX_TEMPLATE_PART_BYTES / 1024} KB`);
    }
    const options: CompileOptions = {
      compat: true,
      strict: false,
      knownHelpersOnly: true,
      // log would let a template write to the server's console.
      knownHelpers: { log: false },
      noEscape: part !== 'html',
    };
    const ast = this.handlebars.parse(source);
    checkStatements(ast.body);
    // precompile runs the whole compiler, so unknown helpers and similar errors surface now, not at send time.
    this.handlebars.precompile(ast, options);
    return this.handlebars.compile(ast, options);
  }

  private run(template: HandlebarsTemplateDelegate, context: object, part: TemplatePart, label: string): string {
    this.budget = { iterations: MAX_LOOP_ITERATIONS, bytes: MAX_RENDERED_BYTES };
    try {
      return template(context, RUNTIME_OPTIONS);
    } catch (err) {
      throw AppException.invalidField(part, `${label} could not be rendered: ${(err as Error).message}`);
    }
  }

  /**
   * Nested loops multiply (compat lookup lets {{#a}}{{#a}}…{{/a}}{{/a}} reuse one list at every depth), so a small
   * template could keep the event loop busy for hours. Every section and #each pays for its iterations and output;
   * a render that runs out of budget fails instead.
   */
  private meterLoops(): void {
    const hooks = this.handlebars.helpers as Record<string, Handlebars.HelperDelegate>;
    for (const name of ['blockHelperMissing', 'each']) {
      const original = hooks[name];
      const budget = () => this.budget;
      this.handlebars.registerHelper(name, function (this: unknown, context: unknown, options: Handlebars.HelperOptions) {
        const spent = budget();
        // A section over a list hands it to #each, which pays for the iterations.
        if (name === 'each' && context && typeof context === 'object') {
          spent.iterations -= Array.isArray(context) ? context.length : Object.keys(context).length;
          if (spent.iterations < 0) throw new Error(`loops run more than ${MAX_LOOP_ITERATIONS} times`);
        }
        const output: unknown = original.call(this, context, options);
        spent.bytes -= typeof output === 'string' ? output.length : 0;
        if (spent.bytes < 0) throw new Error(`output is larger than ${MAX_RENDERED_BYTES / 1024 / 1024} MB`);
        return output;
      });
    }
  }
}

/** Refuses what the compiler lets through but rendering would fail on, with the line it is on. */
function checkStatements(statements: hbs.AST.Statement[]): void {
  for (const statement of statements) {
    const line = statement.loc?.start.line;
    switch (statement.type) {
      case 'PartialStatement':
      case 'PartialBlockStatement':
        throw new LocatedError('partials ({{> name}}) are not supported', line);
      case 'DecoratorBlock':
      case 'Decorator':
        throw new LocatedError('decorators are not supported', line);
      case 'BlockStatement':
      case 'MustacheStatement': {
        const node = statement as hbs.AST.BlockStatement | hbs.AST.MustacheStatement;
        const name = node.path.type === 'PathExpression' ? (node.path as hbs.AST.PathExpression).original : '';
        const arity = BUILTIN_ARITY[name];
        const count = node.params.length;
        if (arity && (count > 0 || node.type === 'BlockStatement') && (count < arity[0] || count > arity[1])) {
          throw new LocatedError(`${name} takes ${arity[0]} argument${arity[0] === 1 ? '' : 's'}, got ${count}`, line);
        }
        if (node.type === 'BlockStatement') {
          if (node.program) checkStatements(node.program.body);
          if (node.inverse) checkStatements(node.inverse.body);
        }
        break;
      }
    }
  }
}

class LocatedError extends Error {
  constructor(
    message: string,
    readonly lineNumber?: number,
  ) {
    super(message);
  }
}

/** "line 3: if doesn't match unless" from Handlebars' and our own errors. */
function describeCompileError(err: unknown): string {
  const error = err as Error & { lineNumber?: number };
  const lines = error.message.split('\n');
  const parseLine = /^Parse error on line (\d+):/.exec(lines[0]);
  if (parseLine) {
    const expected = lines[lines.length - 1];
    const near = lines[1]?.trim();
    return `line ${parseLine[1]}: syntax error${near ? ` near "${near.slice(0, 60)}"` : ''} (${expected})`;
  }
  const message = lines[0].replace(/ - \d+:\d+$/, '').replace(/^You specified knownHelpersOnly, but used the /, '');
  return error.lineNumber ? `line ${error.lineNumber}: ${message}` : message;
}

/** Header-bound text: line breaks become spaces so a rendered subject can never add a header. */
function singleLine(value: string): string {
  return value.replace(/[\r\n]+/g, ' ').trim();
}

/** A bounded cache in insertion order: the oldest entry goes when full. */
export function remember<K, V>(cache: Map<K, V>, key: K, value: V, size: number): void {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > size) cache.delete(cache.keys().next().value as K);
}
