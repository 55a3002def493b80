import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import {
  chooseFieldColumns,
  CSV_BOM,
  SubmissionCsvRow,
  submissionCsvRecord,
  submissionsCsvHeader,
  submissionsCsvStringifier,
} from './submissions-csv';

function row(id: string, fields: SubmissionCsvRow['fields'], extra: Partial<SubmissionCsvRow> = {}): SubmissionCsvRow {
  return {
    id,
    status: 'delivered',
    createdAt: new Date('2026-03-01T10:00:00.000Z'),
    ip: null,
    userAgent: null,
    origin: null,
    fields,
    ...extra,
  };
}

/** The file the export streams: the header and the rows' records through the stringifier. */
async function csvOf(rows: SubmissionCsvRow[], columns: string[]): Promise<string> {
  const records = [submissionsCsvHeader(columns), ...rows.map((r) => submissionCsvRecord(r, columns))];
  // Buffer's decoding, not TextDecoder's (stream/consumers' text()), which would drop the BOM.
  return (await buffer(Readable.from(records).pipe(submissionsCsvStringifier()))).toString('utf8');
}

/** The CSV's lines without the BOM; only valid when no cell holds a line break. */
function lines(csv: string): string[] {
  expect(csv.startsWith(CSV_BOM)).toBe(true);
  expect(csv.endsWith('\r\n')).toBe(true);
  return csv.slice(CSV_BOM.length, -2).split('\r\n');
}

describe('submissions CSV', () => {
  it('writes the header alone for no rows', async () => {
    expect(await csvOf([], [])).toBe(`${CSV_BOM}id,created_at,status,files,ip,user_agent,origin,other_fields\r\n`);
  });

  it('gives the named fields columns, joining repeated values, and the others one JSON column', async () => {
    const csv = await csvOf(
      [
        row(
          's1',
          { name: 'Ann', email: 'ann@example.com' },
          { ip: '203.0.113.7', userAgent: 'Mozilla/5.0', origin: 'https://shop.example' },
        ),
        row(
          's2',
          { email: 'bob@example.com', topics: ['billing', 'sales'], phone: '555', company: 'Acme' },
          { status: 'spam', files: [{ filename: 'a.pdf' }, { filename: 'b.png' }] },
        ),
      ],
      ['name', 'email', 'topics'],
    );
    expect(lines(csv)).toEqual([
      'id,created_at,status,name,email,topics,files,ip,user_agent,origin,other_fields',
      's1,2026-03-01T10:00:00.000Z,delivered,Ann,ann@example.com,,,203.0.113.7,Mozilla/5.0,https://shop.example,',
      's2,2026-03-01T10:00:00.000Z,spam,,bob@example.com,"billing, sales","a.pdf, b.png",,,,"{""phone"":""555"",""company"":""Acme""}"',
    ]);
  });

  it('leaves a cell empty for a row without a field named like an Object.prototype member (constructor, toString)', () => {
    const record = submissionCsvRecord(row('sub_1', { name: 'Ann' }), ['constructor', 'toString', 'name']);
    expect(record.slice(3, 6)).toEqual(['', '', 'Ann']);
    expect(submissionCsvRecord(row('sub_2', JSON.parse('{"constructor":"x"}')), ['constructor']).slice(3, 4)).toEqual(['x']);
  });

  it('quotes commas, quotes and line breaks (a lone CR or LF too)', async () => {
    const csv = await csvOf(
      [row('s1', { a: 'x, y', b: 'say "hi"', c: 'one\r\ntwo', d: 'lf\nonly', e: 'cr\ronly' })],
      ['a', 'b', 'c', 'd', 'e'],
    );
    expect(csv.slice(CSV_BOM.length).split('\r\n')[1]).toBe('s1,2026-03-01T10:00:00.000Z,delivered,"x, y","say ""hi""","one');
    expect(csv).toContain(',"one\r\ntwo","lf\nonly","cr\ronly",,,,,\r\n');
  });

  it('quotes cells holding ";", which spreadsheets of ";" locales would split into cells', async () => {
    const [header, line] = lines(await csvOf([row('s1', { 'a;b': 'x;=1+1;y', plain: 'x' })], ['a;b', 'plain']));
    expect(header).toBe('id,created_at,status,"a;b",plain,files,ip,user_agent,origin,other_fields');
    expect(line).toBe('s1,2026-03-01T10:00:00.000Z,delivered,"x;=1+1;y",x,,,,,');
  });

  it('shows bidi controls escaped, in values, file names and field names, before the formula check', async () => {
    const fields = { ['na\u202eme']: 'invoice\u202egpj.exe', b: '\u2066=1+1\u2069' };
    const [header, line] = lines(await csvOf([row('s1', fields, { files: [{ filename: 'cv\u202Efdp.exe' }] })], Object.keys(fields)));
    expect(header).toContain(',na<U+202E>me,');
    expect(line).toBe('s1,2026-03-01T10:00:00.000Z,delivered,invoice<U+202E>gpj.exe,<U+2066>=1+1<U+2069>,cv<U+202E>fdp.exe,,,,');
  });

  it('neutralizes cells a spreadsheet would run as formulas, header names included', async () => {
    const fields = {
      '=cmd': '=HYPERLINK("http://evil.example","click")',
      plus: "+cmd|' /C calc'!A0",
      at: '@SUM(A1:A2)',
      minus: '-2+3',
      tab: '\t=1+1',
      phone: '+1 555 0100',
      wide: '\uff1d1+1',
    };
    const [header, line] = lines(await csvOf([row('s1', fields)], Object.keys(fields)));
    expect(header).toBe("id,created_at,status,'=cmd,plus,at,minus,tab,phone,wide,files,ip,user_agent,origin,other_fields");
    expect(line).toBe(
      's1,2026-03-01T10:00:00.000Z,delivered,' +
        `"'=HYPERLINK(""http://evil.example"",""click"")",` +
        "'+cmd|' /C calc'!A0,'@SUM(A1:A2),'-2+3,'\t=1+1,'+1 555 0100,'\uff1d1+1,,,,,",
    );
  });

  it('leaves plain numbers alone', async () => {
    const [, line] = lines(await csvOf([row('s1', { a: '-12.5', b: '+3', c: '42', d: '-', e: '-1e5' })], ['a', 'b', 'c', 'd', 'e']));
    expect(line).toBe("s1,2026-03-01T10:00:00.000Z,delivered,-12.5,+3,42,'-,'-1e5,,,,,");
  });

  it('keeps unicode as UTF-8 text', async () => {
    const csv = await csvOf([row('s1', { 名前: 'Zoë 😀', city: 'Zürich' })], ['名前', 'city']);
    expect(lines(csv)[1]).toBe('s1,2026-03-01T10:00:00.000Z,delivered,Zoë 😀,Zürich,,,,,');
    expect(lines(csv)[0]).toContain('名前');
    expect(Buffer.from(csv, 'utf8').subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
  });
});

describe('chooseFieldColumns', () => {
  const frequent = (...names: [string, number][]) => names.map(([name, position]) => ({ name, position }));

  it('shows the columns in the order the form posts them, declared ones included', () => {
    expect(chooseFieldColumns(['email'], frequent(['email', 2], ['zeta', 1], ['mid', 3]), 10)).toEqual(['zeta', 'email', 'mid']);
  });

  it('keeps the declared names and the most frequent ones up to the limit, never a fixed column', () => {
    const columns = chooseFieldColumns(['message'], frequent(['status', 1], ['name', 2], ['rare', 3], ['message', 4]), 2);
    expect(columns).toEqual(['name', 'message']);
  });

  it('puts a declared name no row holds first', () => {
    expect(chooseFieldColumns(['phone'], frequent(['name', 1]), 5)).toEqual(['phone', 'name']);
  });
});
