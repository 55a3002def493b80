import { Readable, pipeline } from 'node:stream';
import { Injectable, Logger, StreamableFile } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Form } from './form.entity';
import type { SubmissionStatus } from './form-submission.entity';
import { undeliveredNotificationCondition } from './notifications/submission-notifications';
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

/** Which of a form's submissions a listing or an export holds. */
export interface SubmissionFilter {
  status?: SubmissionStatus;
  /** true: the spam folder (spam only); false: no spam. */
  spam?: boolean;
  /** undelivered: only submissions whose notification was held (a suppressed recipient), bounced or failed. */
  notification?: 'undelivered';
}

/**
 * The SQL conditions of a filter's `spam` and `notification` on the form_submissions row `alias`, for listings and
 * exports alike (fixed texts, no parameters; `status` is the caller's, as a parameter).
 */
export function submissionFilterConditions(alias: string, filter: SubmissionFilter): string[] {
  const conditions: string[] = [];
  if (filter.spam !== undefined) conditions.push(`${alias}.status ${filter.spam ? '=' : '<>'} 'spam'`);
  if (filter.notification === 'undelivered') conditions.push(undeliveredNotificationCondition(alias));
  return conditions;
}

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
  async csv(accountId: string, form: Form, filter: SubmissionFilter = {}): Promise<StreamableFile> {
    const columns = await this.fieldColumns(accountId, form, filter);
    const counter = { rows: 0 };
    const csv = submissionsCsvStringifier();
    pipeline(Readable.from(this.records(accountId, form.id, filter, columns, counter)), csv, (err) => {
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
   * The form's declared fields (requiredFields) and its most frequent field names, counted by PostgreSQL over the
   * rows the export holds, up to CSV_FIELD_COLUMNS, in the order the form posts them (`json` keeps the posted order).
   */
  private async fieldColumns(accountId: string, form: Form, filter: SubmissionFilter): Promise<string[]> {
    const declared = form.settings.requiredFields ?? [];
    const rows: { name: string; position: number }[] = await this.dataSource.query(
      `SELECT k.name, avg(k.position)::float8 AS position
       FROM form_submissions s CROSS JOIN LATERAL json_object_keys(s.fields) WITH ORDINALITY AS k(name, position)
       WHERE ${['s.account_id = $1', 's.form_id = $2', '($3::varchar IS NULL OR s.status = $3)', ...submissionFilterConditions('s', filter)].join(' AND ')}
         AND json_typeof(s.fields) = 'object' AND k.name <> ALL($4::text[])
       GROUP BY k.name ORDER BY count(*) DESC, avg(k.position), k.name LIMIT $5`,
      [accountId, form.id, filter.status ?? null, FIXED_COLUMNS, CSV_FIELD_COLUMNS + declared.length],
    );
    return chooseFieldColumns(declared, rows, CSV_FIELD_COLUMNS);
  }

  /** The header, then a record per submission. Read only as fast as the response drains; stops when destroyed. */
  private async *records(
    accountId: string,
    formId: string,
    filter: SubmissionFilter,
    columns: string[],
    counter: { rows: number },
  ): AsyncGenerator<string[]> {
    yield submissionsCsvHeader(columns);
    let from: Keyset | undefined;
    do {
      const page = await this.page(accountId, formId, filter, from);
      for (const row of page) {
        yield submissionCsvRecord(row, columns);
        counter.rows++;
      }
      const last = page[page.length - 1];
      from = page.length === CSV_PAGE_ROWS ? { after: last.after, id: last.id } : undefined;
    } while (from);
  }

  private page(accountId: string, formId: string, filter: SubmissionFilter, from: Keyset | undefined): Promise<PageRow[]> {
    const params: unknown[] = [accountId, formId, CSV_PAGE_ROWS];
    const where = ['s.account_id = $1', 's.form_id = $2', ...submissionFilterConditions('s', filter)];
    if (filter.status) where.push(`s.status = $${params.push(filter.status)}`);
    if (from) where.push(`(s.created_at, s.id) < ($${params.push(from.after)}::timestamptz, $${params.push(from.id)})`);
    return this.dataSource.query(
      `SELECT s.id, s.status, s.fields, s.files, s.ip, s.user_agent AS "userAgent", s.origin, s.created_at AS "createdAt",
              s.created_at::text AS after
       FROM form_submissions s WHERE ${where.join(' AND ')}
       ORDER BY s.created_at DESC, s.id DESC LIMIT $3`,
      params,
    );
  }
}
