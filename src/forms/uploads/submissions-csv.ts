import { stringify, type Stringifier } from 'csv-stringify';
import { ownValue } from '../../common/records';
import { escapeBidi } from '../emails/visitor-text';

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

/** The column holding, as a JSON object, the fields of a row that have no column of their own. */
export const OTHER_FIELDS_COLUMN = 'other_fields';
const LEADING_COLUMNS = ['id', 'created_at', 'status'];
const TRAILING_COLUMNS = ['files', 'ip', 'user_agent', 'origin', OTHER_FIELDS_COLUMN];
/** Field names that never get a column (they would repeat a fixed one): such fields go to other_fields. */
export const FIXED_COLUMNS: readonly string[] = [...LEADING_COLUMNS, ...TRAILING_COLUMNS];

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

/**
 * A leading `'` makes a spreadsheet show the cell as text instead of running it. Bidi controls (a right-to-left
 * override makes `invoice.exe` read `exe.eciovni`) are shown as `<U+202E>`, as in the notification.
 */
function neutralize(cell: string): string {
  const shown = escapeBidi(cell);
  return FORMULA_START.test(shown) && !PLAIN_NUMBER.test(shown) ? `'${shown}` : shown;
}

/**
 * The header record: id, created_at, status, one column per field name given, files, ip, user_agent, origin,
 * other_fields. Field names are neutralized like every cell: a submitter picks them.
 */
export function submissionsCsvHeader(fieldColumns: readonly string[]): string[] {
  return [...LEADING_COLUMNS, ...fieldColumns, ...TRAILING_COLUMNS].map(neutralize);
}

/**
 * One submission's record under `submissionsCsvHeader(fieldColumns)`. Repeated values are joined with `, `;
 * the fields without a column go to other_fields as a JSON object (empty when there are none).
 */
export function submissionCsvRecord(row: SubmissionCsvRow, fieldColumns: readonly string[]): string[] {
  const columned = new Set(fieldColumns);
  const others = Object.entries(row.fields).filter(([name]) => !columned.has(name));
  return [
    row.id,
    row.createdAt.toISOString(),
    row.status,
    ...fieldColumns.map((name) => {
      // A column `constructor` must not show Object.prototype's in a row without that field.
      const value = ownValue(row.fields, name);
      return Array.isArray(value) ? value.join(', ') : (value ?? '');
    }),
    (row.files ?? []).map((file) => file.filename).join(', '),
    row.ip ?? '',
    row.userAgent ?? '',
    row.origin ?? '',
    others.length ? JSON.stringify(Object.fromEntries(others)) : '',
  ].map(neutralize);
}

/**
 * csv-stringify's stream: records (arrays of cells) in, RFC 4180 text (CRLF) behind a UTF-8 BOM out. It holds
 * no more than its stream buffers, so a file of any length passes through in constant memory. A cell with `,` or
 * `"` is quoted (csv-stringify's rule), and one with `;`, a CR or an LF too: spreadsheets in locales whose list
 * separator is `;` split an unquoted `x;=1+1;y` into cells, the middle one a formula.
 */
export function submissionsCsvStringifier(): Stringifier {
  return stringify({
    bom: true,
    record_delimiter: 'windows',
    // csv-stringify quotes only the whole CRLF delimiter; a lone CR or LF in a cell must be quoted too.
    quoted_match: /[\r\n;]/,
  });
}

/** A field name as the export counts it: in how many rows, and where it stands in them on average (1 = first). */
export interface FieldFrequency {
  name: string;
  position: number;
}

/**
 * The field columns of an export: the declared names and the frequent ones (given most frequent first), up to
 * `limit`, declared ones first to be kept. They are shown in the order the form posts them (by average position);
 * a declared name no row holds comes first. Names of fixed columns are left out (their fields go to other_fields).
 */
export function chooseFieldColumns(declared: readonly string[], frequent: readonly FieldFrequency[], limit: number): string[] {
  const positions = new Map(frequent.map(({ name, position }) => [name, position]));
  const columns = new Set<string>();
  for (const name of [...declared, ...frequent.map((field) => field.name)]) {
    if (columns.size >= limit) break;
    if (!FIXED_COLUMNS.includes(name)) columns.add(name);
  }
  const positionOf = (name: string) => positions.get(name) ?? 0;
  return [...columns].sort((a, b) => positionOf(a) - positionOf(b));
}
