import { escapeHtml } from '../../common/escape-html';
import { htmlToText, textToHtml } from './html-text';
import { renderLiquid, toSubjectLine } from '../../templates/liquid-dialect';

/** One form submission, as the emails about it see it. */
export interface SubmissionEmailContext {
  /** The form's name. */
  formName: string;
  /** The form's domain, if any. */
  domain: string | null;
  /** Submitted fields without control fields (names starting with `_`; any left are dropped here too). */
  fields: Record<string, string | string[]>;
  ip: string;
  /** ISO 8601. */
  timestamp: string;
  submissionId: string;
  files: { filename: string; size: number }[];
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
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
}

type Fields = [name: string, value: string][];

/** The Liquid context of a submission: `{{ form.<field> }}`, `{{ domain }}`, `{{ timestamp }}`, `{{ ip }}`, `{{ submission.id }}`. */
export function submissionTemplateContext(ctx: SubmissionEmailContext): Record<string, unknown> {
  return {
    // Repeated fields read as one value, "a, b": LiquidJS would print a list without separators.
    form: Object.fromEntries(visibleFields(ctx)),
    domain: ctx.domain,
    timestamp: ctx.timestamp,
    ip: ctx.ip,
    submission: { id: ctx.submissionId },
  };
}

/** The email to the form's owner: the template's parts, or a table of every field. */
export function renderNotification(ctx: SubmissionEmailContext, options: SubmissionEmailOptions = {}): RenderedEmail {
  return renderSubmissionEmail(ctx, options, {
    subject: `New submission: ${ctx.formName}`,
    body: () => notificationBody(ctx),
  });
}

/** The email to the submitter: the template's parts, or a short thank-you with a copy of the fields. */
export function renderAcknowledgment(ctx: SubmissionEmailContext, options: SubmissionEmailOptions = {}): RenderedEmail {
  return renderSubmissionEmail(ctx, options, {
    subject: 'We received your message',
    body: () => acknowledgmentBody(ctx),
  });
}

function renderSubmissionEmail(
  ctx: SubmissionEmailContext,
  options: SubmissionEmailOptions,
  defaults: { subject: string; body: () => { text: string; html: string } },
): RenderedEmail {
  const context = { ...options.template?.variables, ...submissionTemplateContext(ctx) };
  const subjectSource = options.subject ?? options.template?.subject;
  const subject =
    (options.literalSubject ? toSubjectLine(options.literalSubject) : '') ||
    (subjectSource ? renderSubject(subjectSource, context) : '') ||
    toSubjectLine(defaults.subject);
  const body = (options.template && templateBody(options.template, context, options.onTemplateError)) ?? defaults.body();
  return { subject, ...body };
}

/** A subject that does not render (it may be a submitter's `_subject`) is used as written. */
function renderSubject(source: string, context: Record<string, unknown>): string {
  if (!source.includes('{')) return toSubjectLine(source);
  try {
    return renderLiquid({ subject: source }, context).subject;
  } catch {
    return toSubjectLine(source);
  }
}

function templateBody(
  template: SubmissionTemplate,
  context: Record<string, unknown>,
  onError?: (error: Error) => void,
): { text: string; html: string } | null {
  if (template.text == null && template.html == null) return null;
  try {
    const rendered = renderLiquid({ text: template.text, html: template.html }, context);
    const html = rendered.html ?? textToHtml(rendered.text ?? '');
    return { text: rendered.text ?? htmlToText(html), html };
  } catch (err) {
    onError?.(err as Error);
    return null;
  }
}

function notificationBody(ctx: SubmissionEmailContext): { text: string; html: string } {
  const fields = visibleFields(ctx);
  const heading = `New submission: ${ctx.formName}`;
  const intro = ctx.domain ? `A form on ${ctx.domain} was submitted.` : 'A form was submitted.';
  const footer = `Submitted ${ctx.timestamp} from ${ctx.ip} · submission ${ctx.submissionId}`;
  return {
    text:
      [oneLine(heading), oneLine(intro), textFields(fields), textFiles(ctx.files), `-- \n${oneLine(footer)}`].filter(Boolean).join('\n\n') +
      '\n',
    html: htmlDocument(heading, intro, fields, ctx.files, footer),
  };
}

function acknowledgmentBody(ctx: SubmissionEmailContext): { text: string; html: string } {
  const fields = visibleFields(ctx);
  const heading = 'Thank you for your message';
  const intro = `We received your message${ctx.domain ? ` on ${ctx.domain}` : ''}. Here is a copy of what you sent:`;
  const footer = `Received ${ctx.timestamp} · reference ${ctx.submissionId}`;
  return {
    text:
      [oneLine(heading), oneLine(intro), textFields(fields), textFiles(ctx.files), `-- \n${oneLine(footer)}`].filter(Boolean).join('\n\n') +
      '\n',
    html: htmlDocument(heading, intro, fields, ctx.files, footer),
  };
}

function visibleFields(ctx: SubmissionEmailContext): Fields {
  return Object.entries(ctx.fields)
    .filter(([name]) => !name.startsWith('_'))
    .map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value ?? '')]);
}

/** `name: value`; a value of several lines starts on the next line, indented. */
function textFields(fields: Fields): string {
  if (fields.length === 0) return '(no fields)';
  return fields
    .map(([name, value]) => {
      const lines = value.split(/\r\n|\r|\n/);
      return lines.length === 1 ? `${oneLine(name)}: ${value}` : `${oneLine(name)}:\n${lines.map((line) => `  ${line}`).join('\n')}`;
    })
    .join('\n');
}

function textFiles(files: SubmissionEmailContext['files']): string {
  if (files.length === 0) return '';
  return `Files:\n${files.map((file) => `  ${oneLine(file.filename)} (${formatSize(file.size)})`).join('\n')}`;
}

const FONT = 'font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:1.5;color:#1f2328;';
const CELL = 'padding:8px 0;border-bottom:1px solid #eaecef;vertical-align:top;';

/** A plain table layout with inline styles only: no external CSS, fonts or images, as email clients need. */
function htmlDocument(heading: string, intro: string, fields: Fields, files: SubmissionEmailContext['files'], footer: string): string {
  const rows = fields.length
    ? fields
        .map(
          ([name, value]) =>
            `<tr><td style="${CELL}width:32%;padding-right:12px;font-weight:bold;color:#57606a;word-break:break-word;">${escapeHtml(name)}</td>` +
            `<td style="${CELL}word-break:break-word;">${textToHtml(value)}</td></tr>`,
        )
        .join('\n')
    : `<tr><td style="${CELL}color:#57606a;">(no fields)</td></tr>`;
  const fileList = files.length
    ? `<tr><td style="padding:16px 24px 0;${FONT}"><strong>Files</strong><br>` +
      files.map((file) => `${escapeHtml(file.filename)} (${formatSize(file.size)})`).join('<br>') +
      '</td></tr>'
    : '';
  return [
    '<!DOCTYPE html>',
    '<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(heading)}</title></head>`,
    '<body style="margin:0;padding:0;background-color:#f4f5f7;">',
    '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background-color:#f4f5f7;"><tr><td align="center" style="padding:24px 12px;">',
    `<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;background-color:#ffffff;border:1px solid #e3e5e8;${FONT}">`,
    `<tr><td style="padding:20px 24px 4px;font-size:18px;font-weight:bold;">${escapeHtml(heading)}</td></tr>`,
    `<tr><td style="padding:0 24px 8px;color:#57606a;">${escapeHtml(intro)}</td></tr>`,
    `<tr><td style="padding:0 24px;"><table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="${FONT}">`,
    rows,
    '</table></td></tr>',
    fileList,
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
