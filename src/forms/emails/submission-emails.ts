import { escapeHtml } from '../../common/escape-html';
import { userKeyedFrom } from '../../common/records';
import { renderLiquid, toSubjectLine } from '../../templates/liquid-dialect';
import type { FormLanguage } from '../i18n/language';
import { bodyBytes, cutToBudget, MAX_FORM_EMAIL_BODY_BYTES, renderedCost, VALUES_BUDGET } from './email-size';
import { EMAIL_STRINGS, EmailStrings } from './email-strings';
import { htmlToText, textToHtml } from './html-text';
import { defangLinks, escapeBidi } from './visitor-text';

/** One form submission, as the emails about it see it. */
export interface SubmissionEmailContext {
  /** The form's name. */
  formName: string;
  /** The form's id: a value cut short in the notification points to the stored submission by it. */
  formId?: string;
  /** The form's domain, if any. */
  domain: string | null;
  /** Submitted fields without control fields (names starting with `_`; any left are dropped here too). */
  fields: Record<string, string | string[]>;
  ip: string;
  /** ISO 8601. */
  timestamp: string;
  submissionId: string;
  /** `url`: where the owner downloads the stored upload; the notification links its name to it. */
  files: { filename: string; size: number; url?: string }[];
}

export interface RenderedEmail {
  subject: string;
  text: string;
  /** Absent for a text-only email (`_format=plain`). */
  html?: string;
}

/** A stored template of type form or acknowledgment (Liquid, D-28). */
export interface SubmissionTemplate {
  subject: string;
  text: string | null;
  html: string | null;
  /** The template's default values (`{{ company }}`); the submission's own names win over them. */
  variables?: Record<string, unknown> | null;
}

export interface SubmissionEmailOptions {
  /** The form's subject setting; may contain Liquid. Wins over the template's subject, as in /email/send. */
  subject?: string;
  /** The submitter's `_subject`: used as written (never rendered: it is not the account's template), winning over both. */
  literalSubject?: string;
  template?: SubmissionTemplate;
  /** Told when the template's body cannot be rendered (a budget ran out) and the default body is used instead. */
  onTemplateError?: (error: Error) => void;
  /** The language of the default subject and body; English when not given. */
  language?: FormLanguage;
  /** `plain` (`_format=plain`): a text part only. */
  format?: 'plain';
  /** The render time left to the post's emails, shared by all of them; the email's own when not given. */
  budget?: RenderBudget;
}

/**
 * Milliseconds a tenant's Liquid templates may take to render the emails of one post, all of them together
 * (notification and acknowledgment, subjects and bodies): they render on the thread of the HTTP request that posted
 * the form, so a template with runaway loops must not hold it (the default is used). A real template takes well
 * under 1 ms; the rest is room for a garbage collection pause on a busy machine.
 */
export const FORM_EMAIL_RENDER_MS = 50;

/**
 * The render time left to a post's emails. Only rendering counts, not the waits between renders (the
 * acknowledgment's claim and template lookup): a busy database must not leave the acknowledgment's template no time.
 */
export class RenderBudget {
  private leftMs: number;

  constructor(ms = FORM_EMAIL_RENDER_MS) {
    this.leftMs = ms;
  }

  /** Runs one render with the time left (at least 1 ms: a spent budget fails the render, not skips it) and counts what it took. */
  spend<T>(render: (limitMs: number) => T): T {
    const started = performance.now();
    try {
      return render(Math.max(1, this.leftMs));
    } finally {
      this.leftMs -= performance.now() - started;
    }
  }
}

/** A field name as an email shows it is cut to this many characters (after escaping): names count in the size cap too. */
const SHOWN_NAME_LENGTH = 200;

type Fields = [name: string, value: string][];

/**
 * The Liquid context of a submission: `{{ form.<field> }}`, `{{ domain }}`, `{{ timestamp }}`, `{{ ip }}`,
 * `{{ submission.id }}`; `fields` as the email shows them (bidi controls escaped, long values cut, links defanged).
 */
export function submissionTemplateContext(ctx: SubmissionEmailContext, fields: Fields = visibleFields(ctx)): Record<string, unknown> {
  return {
    // Repeated fields read as one value, "a, b": LiquidJS would print a list without separators.
    form: userKeyedFrom(fields),
    domain: ctx.domain,
    timestamp: ctx.timestamp,
    ip: ctx.ip,
    submission: { id: ctx.submissionId },
  };
}

/** The email to the form's owner: the template's parts, or a table of every field. */
export function renderNotification(ctx: SubmissionEmailContext, options: SubmissionEmailOptions = {}): RenderedEmail {
  const strings = EMAIL_STRINGS[options.language ?? 'en'];
  const withHtml = options.format !== 'plain';
  const fields = shownFields(ctx, withHtml, (more) => strings.cutInNotification(more, ctx.submissionId, ctx.formId));
  const email = renderSubmissionEmail(
    ctx,
    () => fields,
    { ...options, literalSubject: options.literalSubject && escapeBidi(options.literalSubject) },
    { subject: strings.notificationSubject(ctx.formName), body: () => notificationBody(ctx, fields, strings) },
  );
  return withHtml ? email : { subject: email.subject, text: email.text };
}

/**
 * The email to the submitter, at an address the visitor typed: the template's parts, or a short thank-you that
 * quotes nothing the visitor sent. A template may ask for fields by name; their links come defanged.
 */
export function renderAcknowledgment(ctx: SubmissionEmailContext, options: SubmissionEmailOptions = {}): RenderedEmail {
  const strings = EMAIL_STRINGS[options.language ?? 'en'];
  // Only an owner's template or subject reads the fields: the default body quotes none.
  const fields = () => shownFields(ctx, true, strings.cutInAcknowledgment, defangLinks);
  return renderSubmissionEmail(
    ctx,
    fields,
    { ...options, literalSubject: undefined },
    { subject: strings.acknowledgmentSubject, body: () => acknowledgmentBody(ctx, strings) },
  );
}

function renderSubmissionEmail(
  ctx: SubmissionEmailContext,
  fields: () => Fields,
  options: SubmissionEmailOptions,
  defaults: { subject: string; body: () => { text: string; html: string } },
): { subject: string; text: string; html: string } {
  const subjectSource = options.subject ?? options.template?.subject;
  const readsFields = options.template || (!options.literalSubject && subjectSource?.includes('{'));
  const context = readsFields ? { ...options.template?.variables, ...submissionTemplateContext(ctx, fields()) } : {};
  const budget = options.budget ?? new RenderBudget();
  const subject =
    (options.literalSubject ? toSubjectLine(options.literalSubject) : '') ||
    (subjectSource ? renderSubject(subjectSource, context, budget) : '') ||
    toSubjectLine(defaults.subject);
  const body = (options.template && templateBody(options.template, context, budget, options.onTemplateError)) ?? defaults.body();
  return { subject, ...body };
}

/** A subject that does not render (it may be a submitter's `_subject`) is used as written. */
function renderSubject(source: string, context: Record<string, unknown>, budget: RenderBudget): string {
  if (!source.includes('{')) return toSubjectLine(source);
  try {
    return budget.spend((renderLimitMs) => renderLiquid({ subject: source }, context, { renderLimitMs }).subject);
  } catch {
    return toSubjectLine(source);
  }
}

function templateBody(
  template: SubmissionTemplate,
  context: Record<string, unknown>,
  budget: RenderBudget,
  onError?: (error: Error) => void,
): { text: string; html: string } | null {
  if (template.text == null && template.html == null) return null;
  try {
    const rendered = budget.spend((renderLimitMs) =>
      renderLiquid({ text: template.text, html: template.html }, context, { renderLimitMs }),
    );
    const html = rendered.html ?? textToHtml(rendered.text ?? '');
    const body = { text: rendered.text ?? htmlToText(html), html };
    if (bodyBytes(body) > MAX_FORM_EMAIL_BODY_BYTES)
      throw new Error(`the rendered email is larger than ${MAX_FORM_EMAIL_BODY_BYTES / 1024 / 1024} MB`);
    return body;
  } catch (err) {
    onError?.(err as Error);
    return null;
  }
}

function notificationBody(ctx: SubmissionEmailContext, fields: Fields, strings: EmailStrings): { text: string; html: string } {
  const heading = strings.notificationSubject(ctx.formName);
  const intro = strings.notificationIntro(ctx.domain);
  const footer = strings.notificationFooter(ctx.timestamp, ctx.ip, ctx.submissionId);
  const files = ctx.files.map((file) => ({ ...file, filename: escapeBidi(file.filename) }));
  return {
    text:
      [oneLine(heading), oneLine(intro), textFields(fields, strings), textFiles(files, strings), `-- \n${oneLine(footer)}`]
        .filter(Boolean)
        .join('\n\n') + '\n',
    html: htmlDocument(heading, intro, [htmlFields(fields, strings), htmlFiles(files, strings)], footer),
  };
}

/** Only what the owner wrote: the form's name, its domain, the reference. Nothing the visitor typed. */
function acknowledgmentBody(ctx: SubmissionEmailContext, strings: EmailStrings): { text: string; html: string } {
  const heading = strings.acknowledgmentHeading;
  const intro = strings.acknowledgmentIntro(ctx.formName, ctx.domain);
  const footer = strings.acknowledgmentFooter(ctx.timestamp, ctx.submissionId);
  return {
    text: [oneLine(heading), oneLine(intro), `-- \n${oneLine(footer)}`].join('\n\n') + '\n',
    html: htmlDocument(heading, intro, [], footer),
  };
}

function visibleFields(ctx: SubmissionEmailContext): Fields {
  return Object.entries(ctx.fields)
    .filter(([name]) => !name.startsWith('_'))
    .map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value ?? '')]);
}

/**
 * The fields as an email shows them: bidi controls escaped (and `reshape` applied), long names cut, then the longest
 * values cut so that names and values together keep the email within its cap.
 */
function shownFields(
  ctx: SubmissionEmailContext,
  withHtml: boolean,
  pointer: (more: number) => string,
  reshape: (text: string) => string = (text) => text,
): Fields {
  const fields = visibleFields(ctx).map(([name, value]): [string, string] => [
    shownName(reshape(escapeBidi(name))),
    reshape(escapeBidi(value)),
  ]);
  const names = fields.reduce((sum, [name]) => sum + renderedCost(name, withHtml), 0);
  const values = cutToBudget(
    fields.map(([, value]) => value),
    VALUES_BUDGET - names,
    withHtml,
    pointer,
  );
  return fields.map(([name], i) => [name, values[i]]);
}

/** A name of at most SHOWN_NAME_LENGTH characters (and "…"), never ending in half of a surrogate pair. */
function shownName(name: string): string {
  if (name.length <= SHOWN_NAME_LENGTH) return name;
  const end = /[\ud800-\udbff]/.test(name[SHOWN_NAME_LENGTH - 1]) ? SHOWN_NAME_LENGTH - 1 : SHOWN_NAME_LENGTH;
  return `${name.slice(0, end)}…`;
}

/** `name: value`; a value of several lines starts on the next line, indented. */
function textFields(fields: Fields, strings: EmailStrings): string {
  if (fields.length === 0) return strings.noFields;
  return fields
    .map(([name, value]) => {
      const lines = value.split(/\r\n|\r|\n/);
      return lines.length === 1 ? `${oneLine(name)}: ${value}` : `${oneLine(name)}:\n${lines.map((line) => `  ${line}`).join('\n')}`;
    })
    .join('\n');
}

function textFiles(files: SubmissionEmailContext['files'], strings: EmailStrings): string {
  if (files.length === 0) return '';
  const line = (file: SubmissionEmailContext['files'][number]) =>
    `  ${oneLine(file.filename)} (${formatSize(file.size)})${linkOf(file) ? `: ${linkOf(file)}` : ''}`;
  return `${strings.files}:\n${files.map(line).join('\n')}`;
}

const FONT = 'font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:1.5;color:#1f2328;';
const CELL = 'padding:8px 0;border-bottom:1px solid #eaecef;vertical-align:top;';

function htmlFields(fields: Fields, strings: EmailStrings): string {
  const rows = fields.length
    ? fields
        .map(
          ([name, value]) =>
            `<tr><td style="${CELL}width:32%;padding-right:12px;font-weight:bold;color:#57606a;word-break:break-word;">${escapeHtml(name)}</td>` +
            `<td style="${CELL}word-break:break-word;">${textToHtml(value)}</td></tr>`,
        )
        .join('\n')
    : `<tr><td style="${CELL}color:#57606a;">${escapeHtml(strings.noFields)}</td></tr>`;
  return [
    `<tr><td style="padding:0 24px;"><table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="${FONT}">`,
    rows,
    '</table></td></tr>',
  ].join('\n');
}

function htmlFiles(files: SubmissionEmailContext['files'], strings: EmailStrings): string {
  if (files.length === 0) return '';
  const entry = (file: SubmissionEmailContext['files'][number]) => {
    const name = escapeHtml(file.filename);
    const link = linkOf(file);
    return `${link ? `<a href="${escapeHtml(link)}" style="color:#0969da;">${name}</a>` : name} (${formatSize(file.size)})`;
  };
  return `<tr><td style="padding:16px 24px 0;${FONT}"><strong>${escapeHtml(strings.files)}</strong><br>${files.map(entry).join('<br>')}</td></tr>`;
}

/** A stored upload's download link: ours, but only http(s) becomes a link. */
function linkOf(file: SubmissionEmailContext['files'][number]): string | undefined {
  return file.url && /^https?:\/\/[^\s"<>]+$/i.test(file.url) ? file.url : undefined;
}

/** A plain table layout with inline styles only: no external CSS, fonts or images, as email clients need. */
function htmlDocument(heading: string, intro: string, sections: string[], footer: string): string {
  return [
    '<!DOCTYPE html>',
    '<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(heading)}</title></head>`,
    '<body style="margin:0;padding:0;background-color:#f4f5f7;">',
    '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background-color:#f4f5f7;"><tr><td align="center" style="padding:24px 12px;">',
    `<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;background-color:#ffffff;border:1px solid #e3e5e8;${FONT}">`,
    `<tr><td style="padding:20px 24px 4px;font-size:18px;font-weight:bold;">${escapeHtml(heading)}</td></tr>`,
    `<tr><td style="padding:0 24px 8px;color:#57606a;">${escapeHtml(intro)}</td></tr>`,
    ...sections,
    `<tr><td style="padding:16px 24px 20px;font-size:12px;color:#8c959f;">${escapeHtml(footer)}</td></tr>`,
    '</table>',
    '</td></tr></table>',
    '</body></html>',
  ]
    .filter(Boolean)
    .join('\n');
}

function oneLine(value: string): string {
  return value.replace(/[\r\n\t\v\f\u0085\u2028\u2029]+/g, ' ');
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
