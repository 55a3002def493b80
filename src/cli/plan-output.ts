import { styleText } from 'node:util';
import type { ApiError, PushResult } from './mailroom-client';

type Style = Parameters<typeof styleText>[0];
export type Paint = (style: Style, text: string) => string;

/** Colours for a terminal; none when NO_COLOR is set or the output is not a terminal (FORCE_COLOR forces them). */
export function paintFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): Paint {
  const colour = env.FORCE_COLOR ? env.FORCE_COLOR !== '0' : !env.NO_COLOR && stream.isTTY === true;
  return colour ? (style, text) => styleText(style, text) : (_style, text) => text;
}

const MARKS = { create: ['+', 'green'], update: ['~', 'yellow'], delete: ['-', 'red'] } as const;
const VALUE_WIDTH = 60;

/** The plan as a table: one line per resource (+ create, ~ update, - delete), its changed fields below it. */
export function formatPlan(result: PushResult, paint: Paint): string {
  const lines: string[] = [];
  if (result.changes.length === 0) {
    lines.push(paint('green', 'No changes: the account matches the file.'));
  } else {
    const width = Math.max(...result.changes.map((change) => change.path.length));
    for (const change of result.changes) {
      const [mark, colour] = MARKS[change.action];
      lines.push(`${paint(colour, `${mark} ${change.action.padEnd(6)}`)}  ${change.path.padEnd(width)}  ${paint('dim', change.kind)}`);
      for (const field of change.changes) {
        const before = change.action === 'create' ? '' : `${show(field.before)} → `;
        const after = change.action === 'delete' ? paint('dim', '(deleted)') : show(field.after);
        lines.push(`      ${paint('dim', `${field.field}:`)} ${before}${after}`);
      }
    }
    const { create, update, delete: removed } = result.summary;
    const verb = result.applied ? 'Applied' : 'Plan';
    lines.push('', `${paint('bold', `${verb}:`)} ${create} to create, ${update} to update, ${removed} to delete.`);
  }
  if (result.notInFile.length > 0) {
    lines.push('', paint('dim', `Not in the file, kept (--prune deletes them): ${result.notInFile.join(', ')}`));
  }
  for (const note of result.notes) lines.push(paint('cyan', `Note: ${note}`));
  return lines.join('\n');
}

/** A refusal with each problem the server named, by its path in the file. */
export function formatApiError(error: ApiError, paint: Paint): string {
  const lines = [
    `${paint('red', `Error ${error.status} ${error.code}:`)} ${error.fields.length ? 'the file has problems' : error.message}`,
  ];
  for (const field of error.fields) lines.push(`  ${paint('bold', field.field)}: ${field.message}`);
  return lines.join('\n');
}

function show(value: unknown): string {
  const text = value === null || value === undefined ? '(none)' : JSON.stringify(value);
  return text.length > VALUE_WIDTH ? `${text.slice(0, VALUE_WIDTH - 1)}…` : text;
}
