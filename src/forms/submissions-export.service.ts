import { Readable, pipeline } from 'node:stream';
import { Injectable, Logger, StreamableFile } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Form } from './form.entity';
import type { SubmissionStatus } from './form-submission.entity';
import {
  chooseFieldColumns,
  FIXED_COLUMNS,
  SubmissionCsvRow,
  submissionCsvRecord,
  submissionsCsvHeader,
  submissionsCsvStringifier,
} from './uploads/submissions-csv';

/** Field columns an export has at most; a row's other fields go to its other_fields cell. */
export const CSV_FIELD_COLUMNS = 50;
/** Rows read per query. Each page is one short indexed query: a slow download holds no connection between them. */
export const CSV_PAGE_ROWS = 1000;

/** Where the previous page ended: created_at as PostgreSQL writes it (microseconds kept), then id. */
interface Keyset {
  after: string;
  id: string;
}

type PageRow = SubmissionCsvRow & { after: string };

/**
 * The CSV export of a form's submissions (GET /api/forms/{id}/submissions?format=csv): every row, newest first,
 * streamed page by page (keyset paging) through csv-stringify's stream into the response, which sets the pace.
 */
@Injectable()
export class SubmissionsExportService {
  private readonly logger = new Logger(SubmissionsExportService.name);

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * The file, ready to stream. Its columns are chosen here, before the first byte, so that a failure up to then is
   * an ordinary error answer. A failure later cannot change the status any more: the response is then cut off
   * (the chunked body never ends), so the client sees a failed download, not a short file that looks complete.
   */
  async csv(accountId: string, form: Form, status: SubmissionStatus | undefined): Promise<StreamableFile> {
    const columns = await this.fieldColumns(accountId, form, status);
    const counter = { rows: 0 };
    const csv = submissionsCsvStringifier();
    pipeline(Readable.from(this.records(accountId, form.id, status, columns, counter)), csv, (err) => {
      if (!err) return;
      if (err.code === 'ERR_STREAM_PREMATURE_CLOSE') {
        this.logger.debug(`CSV export of form ${form.id} stopped after ${counter.rows} rows: the client went away`);
      } else {
        this.logger.error({ err, formId: form.id, rows: counter.rows }, 'CSV export failed part way; the response was cut off');
      }
    });
    return new StreamableFile(csv, {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="${form.id}-submissions.csv"`,
    }).setErrorHandler((_err, response) => response.destroy?.()); // logged above
  }

  /**
   * The form's declared fields (requiredFields) and then its most frequent field names, counted by PostgreSQL
   * over the rows the export holds, up to CSV_FIELD_COLUMNS.
   */
  private async fieldColumns(accountId: string, form: Form, status: SubmissionStatus | undefined): Promise<string[]> {
    const declared = form.settings.requiredFields ?? [];
    const rows: { name: string }[] = await this.dataSource.query(
      `SELECT name FROM form_submissions s CROSS JOIN LATERAL jsonb_object_keys(s.fields) AS name
       WHERE s.account_id = $1 AND s.form_id = $2 AND ($3::varchar IS NULL OR s.status = $3)
         AND jsonb_typeof(s.fields) = 'object' AND name <> ALL($4::text[])
       GROUP BY name ORDER BY count(*) DESC, name LIMIT $5`,
      [accountId, form.id, status ?? null, [...declared, ...FIXED_COLUMNS], CSV_FIELD_COLUMNS],
    );
    return chooseFieldColumns(
      declared,
      rows.map((row) => row.name),
      CSV_FIELD_COLUMNS,
    );
  }

  /** The header, then a record per submission. Read only as fast as the response drains; stops when destroyed. */
  private async *records(
    accountId: string,
    formId: string,
    status: SubmissionStatus | undefined,
    columns: string[],
    counter: { rows: number },
  ): AsyncGenerator<string[]> {
    yield submissionsCsvHeader(columns);
    let from: Keyset | undefined;
    do {
      const page = await this.page(accountId, formId, status, from);
      for (const row of page) {
        yield submissionCsvRecord(row, columns);
        counter.rows++;
      }
      const last = page[page.length - 1];
      from = page.length === CSV_PAGE_ROWS ? { after: last.after, id: last.id } : undefined;
    } while (from);
  }

  private page(accountId: string, formId: string, status: SubmissionStatus | undefined, from: Keyset | undefined): Promise<PageRow[]> {
    const params: unknown[] = [accountId, formId, CSV_PAGE_ROWS];
    const where = ['account_id = $1', 'form_id = $2'];
    if (status) where.push(`status = $${params.push(status)}`);
    if (from) where.push(`(created_at, id) < ($${params.push(from.after)}::timestamptz, $${params.push(from.id)})`);
    return this.dataSource.query(
      `SELECT id, status, fields, files, ip, user_agent AS "userAgent", origin, created_at AS "createdAt", created_at::text AS after
       FROM form_submissions WHERE ${where.join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT $3`,
      params,
    );
  }
}
