import { createHash } from 'node:crypto';
import { Liquid, Tokenizer, TypeGuards } from 'liquidjs';
import type { FilterImplOptions, TagToken, Template as LiquidTemplate } from 'liquidjs';
import { AppException } from '../common/errors/app.exception';

/** The parts of a form or acknowledgment template (D-28). */
export interface LiquidParts {
  subject?: string | null;
  text?: string | null;
  html?: string | null;
}

export interface RenderedLiquid {
  subject: string;
  text?: string;
  html?: string;
}

export type LiquidPart = 'subject' | 'text' | 'html';

/** Upper bound of each part's source, in UTF-8 bytes (the same as Handlebars templates). */
export const MAX_LIQUID_PART_BYTES = 512 * 1024;
/** RFC 5322's line limit, applied to the subject's characters. */
export const MAX_SUBJECT_CHARS = 998;
/** Output one part may produce. */
export const MAX_RENDERED_CHARS = 10 * 1024 * 1024;

/**
 * LiquidJS's own budgets, per render of one part. Bodies are written by account admins; a subject may come from
 * an anonymous submitter's `_subject`, so it gets a budget small enough that a hostile one costs little.
 */
const BODY_LIMITS = { parseLimit: 1_100_000, renderLimit: 500, memoryLimit: 10_000_000 };
const SUBJECT_LIMITS = { parseLimit: 20_000, renderLimit: 50, memoryLimit: 100_000 };

type FilterHandler = Extract<FilterImplOptions, (...args: never[]) => unknown>;

const PARTS: readonly LiquidPart[] = ['subject', 'text', 'html'];

/** Tags whose arguments are one filtered value: `||` becomes a default filter there. */
const VALUE_TAGS = new Set(['echo', 'assign']);
/** Tags whose arguments are a condition: `||` becomes `or` there. */
const CONDITION_TAGS = new Set(['if', 'elsif', 'unless', 'when']);
const FILE_TAGS = ['include', 'render', 'layout'];

/**
 * The spec's template dialect on LiquidJS (D-28): `{{ form.x }}`, `{{ a || b || "x" }}`, `| nl2br`,
 * `| date: "%Y-%m-%d"` (UTC), `{% if %}…{% endif %}` and the rest of Liquid, without file access.
 *
 * HTML escaping: the html engine escapes every output (`outputEscape`). LiquidJS skips that only when the last
 * filter is marked raw; here the only such filters are ones whose output is fully escaped (escape, escape_once,
 * nl2br), and `raw` does not exist, so no submitted value can reach the html unescaped. Escaping the values before
 * rendering instead would break filters (truncate could cut `&amp;`, upcase turns it into `&AMP;`).
 */
class LiquidEngines {
  readonly html = createEngine('html', BODY_LIMITS);
  readonly text = createEngine('text', BODY_LIMITS);
  readonly subject = createEngine('subject', SUBJECT_LIMITS);
  private readonly parsed = new Map<string, LiquidTemplate[]>();
  private static readonly PARSED_CACHE_SIZE = 500;

  engineFor(part: LiquidPart): Liquid {
    return this[part];
  }

  /** Parses a part (reusing an earlier parse of the same source); throws LiquidJS's error. */
  parse(part: LiquidPart, source: string): LiquidTemplate[] {
    if (Buffer.byteLength(source, 'utf8') > MAX_LIQUID_PART_BYTES) {
      throw new Error(`longer than ${MAX_LIQUID_PART_BYTES / 1024} KB`);
    }
    const key = `${part}:${createHash('sha256').update(source).digest('base64')}`;
    const cached = this.parsed.get(key);
    if (cached) return cached;
    const templates = this.engineFor(part).parse(rewriteDialect(source));
    this.parsed.set(key, templates);
    if (this.parsed.size > LiquidEngines.PARSED_CACHE_SIZE) this.parsed.delete(this.parsed.keys().next().value as string);
    return templates;
  }
}

const engines = new LiquidEngines();

/** Parses every part given; each problem names the part and the line, for a 400 at save time. */
export function checkLiquidTemplate(parts: LiquidParts): { field: LiquidPart; message: string }[] {
  const problems: { field: LiquidPart; message: string }[] = [];
  for (const part of PARTS) {
    const source = parts[part];
    if (typeof source !== 'string') continue;
    try {
      engines.parse(part, source);
    } catch (err) {
      problems.push({ field: part, message: describeLiquidError(err) });
    }
  }
  return problems;
}

export interface LiquidRenderBudget {
  /**
   * Milliseconds the whole call may render for, all parts together, instead of each part's own budget: a render on
   * an HTTP request's thread (a form email) must not hold it.
   */
  renderLimitMs?: number;
}

/**
 * Renders the parts given with `context`: html escaped, text and subject verbatim, the subject made one line.
 * A part that does not parse or exceeds a budget is a 400 VALIDATION_FAILED naming the part.
 */
export function renderLiquid(parts: LiquidParts, context: Record<string, unknown>, budget: LiquidRenderBudget = {}): RenderedLiquid {
  const problems = checkLiquidTemplate(parts);
  if (problems.length > 0) throw AppException.validation(problems);
  const deadline = budget.renderLimitMs === undefined ? undefined : performance.now() + budget.renderLimitMs;
  const rendered: RenderedLiquid = { subject: '' };
  for (const part of PARTS) {
    const source = parts[part];
    if (typeof source !== 'string') continue;
    const output = renderPart(part, source, context, deadline);
    if (part === 'subject') rendered.subject = toSubjectLine(output);
    else rendered[part] = output;
  }
  return rendered;
}

function renderPart(part: LiquidPart, source: string, context: Record<string, unknown>, deadline: number | undefined): string {
  try {
    const engine = engines.engineFor(part);
    // LiquidJS counts its renderLimit from the start of a part's render: a part gets what the call has left.
    const left = deadline === undefined ? undefined : Math.min(deadline - performance.now(), engine.options.renderLimit);
    if (left !== undefined && left <= 0) throw new Error('template render limit exceeded');
    // LiquidJS types a render as `any`; without its keepOutputType option it is the output string.
    const text = engine.renderSync(engines.parse(part, source), context, left === undefined ? undefined : { renderLimit: left }) as string;
    // Checked before anything reads the characters: a long output is still a cheap string of references here.
    if (text.length > MAX_RENDERED_CHARS) throw new Error(`output is larger than ${MAX_RENDERED_CHARS / 1024 / 1024} MB`);
    return text;
  } catch (err) {
    throw AppException.invalidField(part, `template could not be rendered: ${describeLiquidError(err)}`);
  }
}

/** Header-safe subject: no line breaks, tabs or other control characters, trimmed, at most 998 characters. */
export function toSubjectLine(value: string): string {
  const line = value
    // eslint-disable-next-line no-control-regex -- control characters are what this strips
    .replace(/[\u0000-\u0008\u000e-\u001f\u007f]/g, '')
    .replace(/[\r\n\t\v\f\u0085\u2028\u2029]+/g, ' ')
    .trim();
  if (line.length <= MAX_SUBJECT_CHARS) return line;
  const cut = line.slice(0, MAX_SUBJECT_CHARS);
  // Never leave half of a surrogate pair at the end.
  return (/[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut).trimEnd();
}

/**
 * Turns the spec's `||` into Liquid before parsing: in outputs, `echo` and `assign` a chain of default filters
 * (`a || b | upcase` → `a | default: b | upcase`), in conditions `or`. String literals and `{% raw %}` stay as
 * written; line numbers do not change. A source the tokenizer rejects is returned as is, for the parser to report.
 */
export function rewriteDialect(source: string): string {
  if (!source.includes('||')) return source;
  let tokens;
  try {
    tokens = new Tokenizer(source).readTopLevelTokens();
  } catch {
    return source;
  }
  let out = '';
  let copied = 0;
  for (const token of tokens) {
    const tag = TypeGuards.isTagToken(token) ? token.name : undefined;
    let replacement: string | undefined;
    if (TypeGuards.isOutputToken(token) || (tag && VALUE_TAGS.has(tag))) replacement = '| default:';
    else if (tag && CONDITION_TAGS.has(tag)) replacement = 'or';
    if (!replacement) continue;
    const [begin, end] = (token as TagToken).contentRange;
    out += source.slice(copied, begin) + replaceOperator(source.slice(begin, end), replacement);
    copied = end;
  }
  return out + source.slice(copied);
}

/** Replaces `||` outside quoted strings (Liquid strings take backslash escapes). */
function replaceOperator(content: string, replacement: string): string {
  let out = '';
  let copied = 0;
  let quote: string | null = null;
  for (let i = 0; i < content.length; i++) {
    const char = content[i];
    if (quote) {
      if (char === '\\') i++;
      else if (char === quote) quote = null;
    } else if (char === '"' || char === "'") {
      quote = char;
    } else if (char === '|' && content[i + 1] === '|') {
      const before = /\s/.test(content[i - 1] ?? ' ') ? '' : ' ';
      const after = /\s/.test(content[i + 2] ?? ' ') ? '' : ' ';
      out += content.slice(copied, i) + before + replacement + after;
      i++;
      copied = i + 1;
    }
  }
  return out + content.slice(copied);
}

/** "line 3: tag {% if a %} not closed" from a LiquidJS error (or our own). */
export function describeLiquidError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const located = /^([\s\S]*?), line:(\d+), col:\d+$/.exec(message);
  const text = located ? located[1] : message;
  const hint = /^undefined filter: raw$/.test(text) ? ' (values are always HTML-escaped in html)' : '';
  return located ? `line ${located[2]}: ${text}${hint}` : `${text}${hint}`;
}

function createEngine(kind: LiquidPart, limits: typeof BODY_LIMITS): Liquid {
  const engine = new Liquid({
    ...limits,
    outputEscape: kind === 'html' ? 'escape' : undefined,
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    // An empty field is false in {% if form.phone %}, as the JavaScript-like || suggests (Liquid alone says true).
    jsTruthy: true,
    timezoneOffset: 0,
    locale: 'en-US',
    // No file system: an empty in-memory map, no relative paths; the file tags are refused below anyway.
    templates: {},
    relativeReference: false,
    dynamicPartials: false,
    cache: false,
  });
  for (const tag of FILE_TAGS) {
    engine.registerTag(tag, {
      parse() {
        throw new Error(`${tag} is not supported: a template is self-contained`);
      },
      render() {
        return undefined;
      },
    });
  }
  if (kind === 'html') {
    const escape = engine.filters.escape as FilterHandler;
    const escapeOnce = engine.filters.escape_once as FilterHandler;
    // Marked raw: their output is escaped already and must not be escaped twice. Nothing else may be raw.
    engine.registerFilter('escape', { handler: escape, raw: true });
    engine.registerFilter('escape_once', { handler: escapeOnce, raw: true });
    engine.registerFilter('nl2br', {
      handler(this: ThisParameterType<FilterHandler>, value: unknown) {
        return (escape.call(this, value) as string).replace(/\r\n|\r|\n/g, '<br>');
      },
      raw: true,
    });
    engine.unregisterFilter('raw');
  } else {
    // Plain text keeps its line breaks; the subject turns them into spaces afterwards.
    engine.registerFilter('nl2br', (value: unknown) => value);
  }
  return engine;
}
