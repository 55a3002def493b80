import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CallHandler, ExecutionContext, HttpException, HttpStatus, Injectable, NestInterceptor, type Type } from '@nestjs/common';
import { AnyFilesInterceptor, type MulterModuleOptions } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { AppException } from '../../common/errors/app.exception';
import { BODY_CUT } from '../../rate-limits/body-gate';
import { ErrorCode } from '../../common/errors/error-code';
import { AppConfigService } from '../../config/app-config.service';
import { type AttachmentUpload, digestOf } from '../../outbox/attachments/attachment-content';
import { inspectUpload } from './file-inspection';
import { allowedBy } from './refused-types';

/** All files of one submission together. */
export const MAX_SUBMISSION_UPLOAD_BYTES = 10 * 1024 * 1024;
export const MAX_SUBMISSION_FILES = 10;
export const MAX_SUBMISSION_FIELDS = 200;
export const MAX_SUBMISSION_FIELD_BYTES = 100 * 1024;
export const MAX_UPLOAD_FILENAME_LENGTH = 200;
/** The largest multipart body worth reading: the files, the fields, and the parts' own headers (the body gate's limit for uploads). */
export const MAX_SUBMISSION_BODY_BYTES = MAX_SUBMISSION_UPLOAD_BYTES + 2 * 1024 * 1024;

/** multer's limits; the files go to disk (UPLOAD_DIR), never to the heap, while the request runs. */
export const SUBMISSION_MULTER_OPTIONS: MulterModuleOptions = {
  limits: {
    fileSize: MAX_SUBMISSION_UPLOAD_BYTES,
    files: MAX_SUBMISSION_FILES,
    fields: MAX_SUBMISSION_FIELDS,
    fieldSize: MAX_SUBMISSION_FIELD_BYTES,
    parts: 220,
    fieldNameSize: 200,
  },
  // Browsers send file names as raw UTF-8; busboy's default (latin1) would turn `résumé.pdf` into mojibake.
  defParamCharset: 'utf8',
};

const MULTIPART_LIMITS =
  `at most ${MAX_SUBMISSION_FIELDS} fields of ${MAX_SUBMISSION_FIELD_BYTES / 1024} KB, ${MAX_SUBMISSION_FILES} files ` +
  `and 200-character field names`;

/**
 * Parses multipart bodies into `request.body` and `request.files`, the files written to UPLOAD_DIR and removed when
 * the response is done (by then what is mailed of them is stored with the message); other bodies (JSON, url-encoded)
 * were parsed earlier and pass through untouched. Nest already turns multer's limit and malformed-body errors into
 * 413 and 400 HttpExceptions; they are rethrown as ours so the body says what the limits are.
 */
@Injectable()
export class SubmissionUploadsInterceptor implements NestInterceptor {
  private readonly multer: NestInterceptor;

  constructor(config: AppConfigService) {
    const destination = config.uploadDir;
    mkdirSync(destination, { recursive: true });
    const MulterInterceptor: Type<NestInterceptor> = AnyFilesInterceptor({
      ...SUBMISSION_MULTER_OPTIONS,
      storage: new UploadFiles(destination),
    });
    this.multer = new MulterInterceptor();
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    if (!request.is('multipart')) return next.handle();
    // busboy reads only form-data; multer would fail on multipart/mixed with a plain Error (a 500).
    if (!request.is('multipart/form-data')) {
      throw new AppException(ErrorCode.UnsupportedMediaType, 'Of the multipart types only multipart/form-data is accepted');
    }
    // multer removes what it wrote when the body fails; what it kept goes when the response is done.
    http.getResponse<Response>().once('close', () => void removeUploads(request));
    // A body the gate cuts at its limit (413 answered) never ends for busboy: a request error makes multer give up.
    const cut = () => request.emit('error', new Error('The request body was cut at its limit'));
    request.once(BODY_CUT, cut);
    try {
      return await this.multer.intercept(context, next);
    } catch (error) {
      throw multipartError(error, request);
    } finally {
      request.off(BODY_CUT, cut);
    }
  }
}

function multipartError(error: unknown, request: Request): unknown {
  // multer's own `Request aborted` / `Request closed`: the client left mid-body, nobody reads this answer, and
  // it is not our error to log as one.
  if (!(error instanceof HttpException)) {
    return request.complete ? error : new AppException(ErrorCode.ValidationFailed, 'The multipart body ended before it was complete');
  }
  const status: HttpStatus = error.getStatus();
  if (status === HttpStatus.PAYLOAD_TOO_LARGE) {
    return new AppException(
      ErrorCode.PayloadTooLarge,
      `Each uploaded file may be at most ${MAX_SUBMISSION_UPLOAD_BYTES / 1024 / 1024} MB`,
      {
        limit_bytes: MAX_SUBMISSION_UPLOAD_BYTES,
      },
    );
  }
  if (status === HttpStatus.BAD_REQUEST) {
    return new AppException(
      ErrorCode.ValidationFailed,
      `The multipart body was refused (${error.message}); a form may send ${MULTIPART_LIMITS}`,
    );
  }
  return error;
}

/** What multer's disk storage hands over (a subset of Express.Multer.File; @types/multer is not installed). */
export interface ReceivedFile {
  fieldname: string;
  originalname: string;
  mimetype: string;
  /** Where the file is, until the response is done. */
  path: string;
  size: number;
}

export interface UploadedAttachment {
  field: string;
  filename: string;
  contentType: string;
  size: number;
  /** The received file, until the response is done. */
  path: string;
}

/** An attachment as a message stores it. */
export interface MailAttachment {
  filename: string;
  contentType: string;
  /** base64 */
  content: string;
}

/**
 * multer's storage engine (its documented StorageEngine interface) writing each file as it arrives to a file of
 * its own under `directory`, never holding it whole.
 */
class UploadFiles {
  constructor(private readonly directory: string) {}

  _handleFile(
    _request: Request,
    file: { stream: Readable },
    done: (error: Error | null, info?: { path: string; size: number }) => void,
  ): void {
    const path = join(this.directory, `upload-${randomBytes(12).toString('hex')}`);
    const out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
    pipeline(file.stream, out).then(
      () => done(null, { path, size: out.bytesWritten }),
      (error: Error) =>
        unlink(path).then(
          () => done(error),
          () => done(error),
        ),
    );
  }

  _removeFile(_request: Request, file: { path?: string }, done: (error: Error | null) => void): void {
    if (!file.path) return done(null);
    unlink(file.path).then(
      () => done(null),
      () => done(null),
    );
  }
}

function removeUploads(request: Request): Promise<unknown> {
  const files = (request as Request & { files?: ReceivedFile[] }).files ?? [];
  return Promise.all(files.map((file) => unlink(file.path).catch(() => undefined)));
}

/** Declared types a browser would run or render as a page, which the bytes did not confirm. */
const ACTIVE_MIME = /html|javascript|ecmascript|svg|(^|\/|\+)xml$|xsl|x-sh$|shellscript|msdownload|msdos|x-msi|hta$|vbscript/i;
const MIME_SYNTAX = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;

/** Strips paths, control and formatting characters (bidi overrides disguise `exe` as `gpj`) and quotes. */
export function sanitizeFilename(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base
    .normalize('NFC')
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}"']/gu, '')
    .trim()
    .replace(/^\.+/, '')
    // Windows drops trailing dots and spaces: `a.exe.` would open as `a.exe`.
    .replace(/[. ]+$/, '');
  const chars = Array.from(clean);
  if (chars.length <= MAX_UPLOAD_FILENAME_LENGTH) return clean || 'upload';
  const extension = /\.[^.]{1,20}$/.exec(clean)?.[0] ?? '';
  const stem = chars
    .slice(0, MAX_UPLOAD_FILENAME_LENGTH - Array.from(extension).length)
    .join('')
    .replace(/[. ]+$/, '');
  return `${stem}${extension}`;
}

/** Text types a declared type of plain UTF-8 text may keep (none of them runs in a browser). */
const PLAIN_TEXT_TYPES = new Set(['text/plain', 'text/csv', 'text/tab-separated-values', 'text/markdown', 'text/calendar', 'text/vcard']);

/**
 * The bytes' type; else, for UTF-8 text, the declared type if it is one of PLAIN_TEXT_TYPES, else text/plain (but
 * application/octet-stream when the browser claimed a type it would run, or no valid type); else
 * application/octet-stream: a browser's claim (`image/png` for bytes that are no PNG) is never passed on.
 */
function contentTypeOf(sniffed: string | undefined, declared: string, text: boolean): string {
  if (sniffed) return sniffed;
  if (!text) return 'application/octet-stream';
  const type = declared.trim().toLowerCase();
  if (PLAIN_TEXT_TYPES.has(type)) return type;
  return MIME_SYNTAX.test(type) && !ACTIVE_MIME.test(type) ? 'text/plain' : 'application/octet-stream';
}

/**
 * Checks a submission's files: 413 over 10 MB in all, 400 naming each refused file's field for programs and
 * documents a browser would run (by the bytes, or by the name), and what Gmail and Outlook refuse (refused-types.ts)
 * unless the form's allowedFileTypes names it. The browser's Content-Type is not trusted.
 */
export async function checkUploads(
  files: ReceivedFile[] | undefined,
  allowedFileTypes: readonly string[] = [],
): Promise<UploadedAttachment[]> {
  if (!files?.length) return [];
  const total = files.reduce((sum, file) => sum + file.size, 0);
  if (total > MAX_SUBMISSION_UPLOAD_BYTES) {
    throw new AppException(
      ErrorCode.PayloadTooLarge,
      `The uploaded files may be at most ${MAX_SUBMISSION_UPLOAD_BYTES / 1024 / 1024} MB together`,
      {
        limit_bytes: MAX_SUBMISSION_UPLOAD_BYTES,
        received_bytes: total,
      },
    );
  }

  const allowed = new Set(allowedFileTypes);
  const problems: { field: string; message: string }[] = [];
  const attachments: UploadedAttachment[] = [];
  for (const file of files) {
    const filename = sanitizeFilename(file.originalname);
    const inspection = await inspectUpload(file.path, file.size, filename);
    const refusal = inspection.refusals.find((r) => !allowedBy(r, allowed));
    if (refusal) {
      problems.push({ field: file.fieldname, message: `"${filename}" is refused: ${refusal.reason}` });
      continue;
    }
    attachments.push({
      field: file.fieldname,
      filename,
      contentType: contentTypeOf(inspection.mime, file.mimetype, inspection.text),
      size: file.size,
      path: file.path,
    });
  }
  if (problems.length > 0) throw AppException.validation(problems);
  return attachments;
}

/** An accepted upload's bytes, to keep in the attachment store with its submission. */
export type StoredUpload = AttachmentUpload & { content: Buffer };

/** The accepted uploads' bytes with their SHA-256, in the submission's order, each file read once. */
export async function readUploads(uploads: UploadedAttachment[]): Promise<StoredUpload[]> {
  return Promise.all(
    uploads.map(async ({ path }) => {
      const content = await readFile(path);
      return { ...digestOf(content), content };
    }),
  );
}

/** The uploads as a message's attachments (base64), from the bytes read for the store. */
export function asMailAttachments(uploads: UploadedAttachment[], stored: StoredUpload[]): MailAttachment[] {
  return uploads.map(({ filename, contentType }, i) => ({ filename, contentType, content: stored[i].content.toString('base64') }));
}

/**
 * The attachments, in order, that fit in `budget` bytes of an email as encoded (base64 in lines of 76 characters);
 * those that do not are left to the notification's links to the stored files.
 */
export function attachmentsWithin(attachments: MailAttachment[], budget: number): MailAttachment[] {
  let left = budget;
  return attachments.filter(({ content }) => {
    const encoded = Math.ceil((content.length * 78) / 76) + 200;
    if (encoded > left) return false;
    left -= encoded;
    return true;
  });
}
