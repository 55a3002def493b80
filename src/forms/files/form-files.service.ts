import { Injectable, Logger, StreamableFile } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { AttachmentStore } from '../../outbox/attachments/attachment-store';
import type { SubmittedFile } from '../form-submission.entity';
import { FileLinkTarget, FormFileLinks } from './file-links';

/** Which submission: any account's by a link's proof, else the caller's, of one form. */
type SubmissionScope = { accountId: string; formId: string } | null;

interface StoredFileRow {
  file: SubmittedFile | null;
  hash: string | null;
  stored: boolean;
}

/** The uploads of stored submissions, served from the attachment store: to the API (forms.read) and by a mailed link. */
@Injectable()
export class FormFilesService {
  private readonly logger = new Logger(FormFilesService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly store: AttachmentStore,
    private readonly links: FormFileLinks,
  ) {}

  /** GET /api/forms/{id}/submissions/{submissionId}/files/{index}: a file of a submission of the caller's form. */
  ofSubmission(accountId: string, formId: string, submissionId: string, index: number): Promise<StreamableFile> {
    return this.download({ submissionId, index }, { accountId, formId });
  }

  /** GET /forms/files/{token}: the file a notification links to, while the link is valid. */
  byLink(token: string): Promise<StreamableFile> {
    const target = this.links.verify(token);
    if (target === 'expired') {
      throw new AppException(
        ErrorCode.NotFound,
        'This download link has expired: download the file with the API (GET /api/forms/{id}/submissions)',
      );
    }
    if (!target) throw AppException.notFound('Download link');
    return this.download(target, null);
  }

  private async download({ submissionId, index }: FileLinkTarget, scope: SubmissionScope): Promise<StreamableFile> {
    const rows: StoredFileRow[] = await this.dataSource.query(
      `SELECT s.files -> $2::int AS file, f.hash, b.hash IS NOT NULL AS stored
         FROM form_submissions s
         LEFT JOIN form_submission_files f ON f.submission_id = s.id AND f.seq = $2
         LEFT JOIN attachment_blobs b ON b.hash = f.hash
        WHERE s.id = $1 AND ($3::varchar IS NULL OR (s.account_id = $3 AND s.form_id = $4))`,
      [submissionId, index, scope?.accountId ?? null, scope?.formId ?? null],
    );
    if (rows.length === 0) throw AppException.notFound('Submission', submissionId);
    const [{ file, hash, stored }] = rows;
    if (!file) throw AppException.notFound(`File ${index} of submission`, submissionId);
    if (!hash || !stored) {
      throw new AppException(
        ErrorCode.NotFound,
        `The file ${file.filename} of submission ${submissionId} is not stored (it was received before uploads were kept)`,
      );
    }
    const stream = this.store.open({ filename: file.filename, hash, size: file.size });
    stream.on('error', (err) =>
      this.logger.error({ err, submissionId, index }, 'A stored upload could not be read; the download was cut off'),
    );
    return new StreamableFile(stream, {
      // Stored types come from the bytes (or are plain text, or application/octet-stream); served as a download only.
      type: file.contentType,
      length: file.size,
      disposition: contentDisposition(file.filename),
    }).setErrorHandler((_err, response) => response.destroy?.());
  }
}

/** `attachment` with the name in ASCII (others replaced) and, when it has more, RFC 6266's UTF-8 `filename*`. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const utf8 = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return ascii === filename ? `attachment; filename="${ascii}"` : `attachment; filename="${ascii}"; filename*=UTF-8''${utf8}`;
}
