import { stringify } from 'csv-stringify/sync';

export interface SubmissionCsvRow {
  id: string;
  status: string;
  createdAt: Date;
  ip: string | null;
  userAgent: string | null;
  origin: string | null;
  fields: Record<string, string | string[]>;
  files?: { filename: string }[];
}

/** Excel reads a CSV file as the system's ANSI code page unless it starts with a UTF-8 BOM. */
export const CSV_BOM = '\ufeff';

/**
 * Characters a spreadsheet may start a formula with (OWASP "CSV Injection"), fullwidth forms included: some
 * spreadsheet locales read them as their ASCII counterparts.
 */
const FORMULA_START = /^[=+\-@\t\r\uff1d\uff0b\uff0d\uff20]/;
/**
 * A plain number cannot hold a formula; quoting it would turn `-12.5` into text that no longer sums. Anything
 * more (`+1 555 0100`, `-2+3`) is prefixed.
 */
const PLAIN_NUMBER = /^[+-]?\d+(\.\d+)?$/;

/** A leading `'` makes a spreadsheet show the cell as text instead of running it. */
function neutralize(cell: string): string {
  return FORMULA_START.test(cell) && !PLAIN_NUMBER.test(cell) ? `'${cell}` : cell;
}

function fieldColumns(rows: SubmissionCsvRow[]): string[] {
  const names = new Set<string>();
  for (const row of rows) for (const name of Object.keys(row.fields)) names.add(name);
  return [...names];
}

/**
 * Submissions as RFC 4180 CSV (CRLF, a header row even without rows) behind a UTF-8 BOM. Columns: id,
 * created_at, status, every field name in first-seen order, files, ip, user_agent, origin. Repeated values are
 * joined with `, `. Every cell, the header's field names included (a submitter picks them), is neutralized
 * against formula injection.
 */
export function submissionsCsv(rows: SubmissionCsvRow[]): string {
  const fields = fieldColumns(rows);
  const header = ['id', 'created_at', 'status', ...fields, 'files', 'ip', 'user_agent', 'origin'];
  const records = rows.map((row) => [
    row.id,
    row.createdAt.toISOString(),
    row.status,
    ...fields.map((name) => {
      const value = row.fields[name];
      return Array.isArray(value) ? value.join(', ') : (value ?? '');
    }),
    (row.files ?? []).map((file) => file.filename).join(', '),
    row.ip ?? '',
    row.userAgent ?? '',
    row.origin ?? '',
  ]);
  const csv = stringify(
    [header, ...records].map((record) => record.map(neutralize)),
    {
      record_delimiter: 'windows',
      // csv-stringify quotes only the whole CRLF delimiter; a lone CR or LF in a cell must be quoted too.
      quoted_match: /[\r\n]/,
    },
  );
  return `${CSV_BOM}${csv}`;
}
