import { Logger } from '@nestjs/common';
import { parse } from 'csv-parse';
import { get, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DataSource } from 'typeorm';
import { CSV_FIELD_COLUMNS } from '../../src/forms/submissions-export.service';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForValue } from '../support/wait-for';

const ROWS = 100_000;
/** Fields f_0 … f_59: f_k is in every (k+2)th row, so each is rarer than the one before. */
const GRADED_FIELDS = 60;
/**
 * Growth of the live memory (heap and external, after a full collection) of the process, which the app runs in,
 * while it exports. Measured after collections: V8 lets garbage pile up for a while, which RSS would count.
 */
const MEMORY_BOUND_MB = 50;
/** How often the memory is collected and measured during a download. */
const SAMPLE_MS = 500;

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
/** Heap and external memory that is still reachable. */
function liveMemory(): number {
  collectGarbage();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

interface Download {
  status: number;
  headers: IncomingHttpHeaders;
  header: string[];
  records: number;
  /** Distinct ids (sub_000001 … sub_100000) among the records. */
  distinctIds: number;
  /** The records of the rows named in `keep`, by id. */
  kept: Map<string, string[]>;
  /** The response ended normally (false: cut off, or dropped by us). */
  complete: boolean;
  /** The most the live memory grew over what it was before the request. */
  peakGrowthMb: number;
  /** The same of the RSS, for the record (it counts garbage not yet collected too). */
  peakRssGrowthMb: number;
}

/**
 * The CSV export of 100,000 submissions with random field names: every row, the columns capped, the other fields
 * in one JSON cell, and the memory of the process flat. Also what a client that goes away, and a failure part way,
 * do to it.
 */
describe('CSV export of a large form', () => {
  let t: TestApp;
  let key: string;
  let formId: string;
  let dataSource: DataSource;

  /**
   * Streams the export through csv-parse, keeping only counts, the ids and the records of `keep`: the test process
   * is the app's process, so holding the file would hide what the app holds. `stopAfter` drops the connection.
   */
  function download(query = '', options: { keep?: string[]; stopAfter?: number } = {}): Promise<Download> {
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const baseline = liveMemory();
    const rssBaseline = process.memoryUsage.rss();
    let peak = baseline;
    let rssPeak = rssBaseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, liveMemory());
      rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    }, SAMPLE_MS);
    // A bitmap, not a Set of ids: what the test holds counts against the bound.
    const seen = new Uint8Array(ROWS + 1);
    return new Promise((resolve, reject) => {
      const request = get(
        { host: '127.0.0.1', port, path: `/api/forms/${formId}/submissions?format=csv${query}`, headers: bearer(key) },
        (res) => {
          const result: Download = {
            status: res.statusCode ?? 0,
            headers: res.headers,
            header: [],
            records: 0,
            distinctIds: 0,
            kept: new Map(),
            complete: false,
            peakGrowthMb: 0,
            peakRssGrowthMb: 0,
          };
          const finish = () => {
            clearInterval(sampler);
            result.peakGrowthMb = (Math.max(peak, liveMemory()) - baseline) / 2 ** 20;
            result.peakRssGrowthMb = (rssPeak - rssBaseline) / 2 ** 20;
            resolve(result);
          };
          const parser = parse({ bom: true });
          parser.on('data', (record: string[]) => {
            if (result.header.length === 0) return void (result.header = record);
            result.records++;
            const index = Number(/^sub_(\d{6})$/.exec(record[0])?.[1] ?? 0);
            if (index > 0 && !seen[index]) result.distinctIds += seen[index] = 1;
            if (options.keep?.includes(record[0])) result.kept.set(record[0], record);
            if (result.records === options.stopAfter) request.destroy();
          });
          parser.on('end', () => {
            result.complete = res.complete;
            finish();
          });
          parser.on('error', reject);
          res.on('aborted', () => parser.end());
          res.on('close', () => !res.complete && parser.end());
          res.pipe(parser);
        },
      );
      request.on('error', (err: NodeJS.ErrnoException) => {
        if (options.stopAfter === undefined) reject(err);
      });
    });
  }

  beforeAll(async () => {
    t = await createTestApp({ env: { DOMAIN_VERIFICATION: 'skip', APP_ROLE: 'api' } });
    const account = await createAccount(t, 'Exporter');
    key = account.adminKey;
    const form = await t.http
      .post('/api/forms')
      .set(bearer(key))
      .send({ name: 'Big', to: 'owner@example.org', requiredFields: ['message'] });
    if (form.status !== 201) throw new Error(JSON.stringify(form.body));
    formId = form.body.id;
    dataSource = t.app.get(DataSource);
    // Every row: email and message; f_k in every (k+2)th row; one name of 100 at random (r_…, each in ~1% of rows). Every tenth is
    // spam. Pairs of rows share a created_at, microseconds apart from the next pair: the pages must not lose a row.
    await dataSource.query(
      `INSERT INTO form_submissions (id, account_id, form_id, status, fields, files, message_ids, ip, user_agent, origin, created_at)
       SELECT 'sub_' || lpad(i::text, 6, '0'), $1, $2, CASE WHEN i % 10 = 0 THEN 'spam' ELSE 'accepted' END,
              jsonb_build_object('email', 'u' || i || '@example.org', 'message', 'hello ' || i)
                || (SELECT coalesce(jsonb_object_agg('f_' || k, 'v' || k), '{}') FROM generate_series(0, $3 - 1) k WHERE i % (k + 2) = 0)
                || jsonb_build_object('r_' || floor(random() * 100)::int, 'x'),
              '[]', '[]', '203.0.113.9', 'Mozilla/5.0', 'https://example.com',
              timestamptz '2026-06-01 12:00:00+00' - (i / 2) * interval '1 microsecond'
       FROM generate_series(1, $4) i`,
      [account.accountId, formId, GRADED_FIELDS, ROWS],
    );
  });
  afterAll(() => t.close());

  it('streams every row, spam included, with capped columns, in flat memory', async () => {
    const sample = ['sub_000001', 'sub_000060', 'sub_050000', 'sub_099999', 'sub_100000'];
    const csv = await download('', { keep: sample });

    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="${formId}-submissions.csv"`);
    expect(csv.complete).toBe(true);
    expect(csv.records).toBe(ROWS);
    expect(csv.distinctIds).toBe(ROWS);

    // The declared field and the most frequent ones (email in every row, then f_0, f_1, …) up to the cap, in the order
    // the rows hold them (here jsonb's, which the rows were built with).
    const fieldColumns = ['message', 'email', ...Array.from({ length: CSV_FIELD_COLUMNS - 2 }, (_, k) => `f_${k}`)];
    expect(csv.header.slice(0, 3)).toEqual(['id', 'created_at', 'status']);
    expect(csv.header.slice(3, -5).sort()).toEqual([...fieldColumns].sort());
    expect(csv.header.slice(-5)).toEqual(['files', 'ip', 'user_agent', 'origin', 'other_fields']);

    // Each row's fields are all there: in their column or in other_fields.
    const stored: { id: string; fields: Record<string, string>; status: string }[] = await dataSource.query(
      'SELECT id, fields, status FROM form_submissions WHERE id = ANY($1)',
      [sample],
    );
    for (const row of stored) {
      const record = csv.kept.get(row.id)!;
      const cell = (column: string) => record[csv.header.indexOf(column)];
      const exported: Record<string, string> = JSON.parse(cell('other_fields') || '{}');
      for (const name of fieldColumns) if (cell(name) !== '') exported[name] = cell(name);
      expect({ id: row.id, status: cell('status'), fields: exported }).toEqual({ id: row.id, status: row.status, fields: row.fields });
      expect(Object.keys(exported).some((name) => name.startsWith('r_'))).toBe(true);
    }

    console.log(
      `CSV export of ${ROWS} rows: live memory grew by at most ${csv.peakGrowthMb.toFixed(1)} MB ` +
        `(RSS by ${csv.peakRssGrowthMb.toFixed(1)} MB, uncollected garbage included)`,
    );
    expect(csv.peakGrowthMb).toBeLessThan(MEMORY_BOUND_MB);
  }, 120_000);

  it('exports only the status asked for', async () => {
    const csv = await download('&status=spam');
    expect(csv.records).toBe(ROWS / 10);
  }, 60_000);

  it('stops reading pages when the client goes away', async () => {
    const debug = jest.spyOn(Logger.prototype, 'debug');
    try {
      const csv = await download('', { stopAfter: 2000 });
      expect(csv.complete).toBe(false);
      const stopped = await waitForValue('the export to stop', () =>
        debug.mock.calls.map(([message]) => String(message)).find((message) => message.includes(formId)),
      );
      const sent = Number(/stopped after (\d+) rows: the client went away/.exec(stopped)?.[1]);
      expect(sent).toBeGreaterThanOrEqual(2000);
      expect(sent).toBeLessThan(ROWS / 2);
    } finally {
      debug.mockRestore();
    }
  }, 60_000);

  it('cuts the response off when a page fails part way, so the file does not look complete', async () => {
    const query = dataSource.query.bind(dataSource);
    let pages = 0;
    const failing = jest.spyOn(dataSource, 'query').mockImplementation((sql: string, ...rest: unknown[]) => {
      if (sql.includes('created_at::text AS after') && ++pages === 3) return Promise.reject(new Error('connection lost'));
      return query(sql, ...(rest as [unknown[]]));
    });
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const csv = await download();
      expect(csv.status).toBe(200);
      expect(csv.complete).toBe(false);
      // Two pages were read; what was still in the stream buffers when it failed is dropped with the connection.
      expect(csv.records).toBeGreaterThan(0);
      expect(csv.records).toBeLessThanOrEqual(2000);
      expect(errors.mock.calls.some(([, message]) => String(message).includes('CSV export failed part way'))).toBe(true);
    } finally {
      failing.mockRestore();
      errors.mockRestore();
    }
  }, 60_000);
});
