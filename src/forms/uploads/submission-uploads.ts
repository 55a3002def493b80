import { CallHandler, ExecutionContext, HttpException, HttpStatus, Injectable, NestInterceptor } from '@nestjs/common';
import { AnyFilesInterceptor, type MulterModuleOptions } from '@nestjs/platform-express';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { sniffUpload } from './upload-sniff';

/** All files of one submission together. */
export const MAX_SUBMISSION_UPLOAD_BYTES = 10 * 1024 * 1024;
export const MAX_SUBMISSION_FILES = 10;
export const MAX_SUBMISSION_FIELDS = 200;
export const MAX_SUBMISSION_FIELD_BYTES = 100 * 1024;
export const MAX_UPLOAD_FILENAME_LENGTH = 200;
/** The largest multipart body worth reading: the files, the fields, and the parts' own headers. */
const MAX_SUBMISSION_BODY_BYTES = MAX_SUBMISSION_UPLOAD_BYTES + 2 * 1024 * 1024;

/** Memory storage (multer's default without `dest`): files are mailed, never written to disk. */
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

const MulterInterceptor = AnyFilesInterceptor(SUBMISSION_MULTER_OPTIONS);

/**
 * Parses multipart bodies into `request.body` and `request.files`; other bodies (JSON, url-encoded) were parsed
 * earlier and pass through untouched. Nest already turns multer's limit and malformed-body errors into 413 and
 * 400 HttpExceptions; they are rethrown as ours so the body says what the limits are.
 */
@Injectable()
export class SubmissionUploadsInterceptor implements NestInterceptor {
  private readonly multer = new MulterInterceptor();

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    if (!request.is('multipart')) return next.handle();
    // busboy reads only form-data; multer would fail on multipart/mixed with a plain Error (a 500).
    if (!request.is('multipart/form-data')) {
      throw new AppException(ErrorCode.UnsupportedMediaType, 'Of the multipart types only multipart/form-data is accepted');
    }
    // Multer would hold up to 10 files of 10 MB each before checkUploads sees the total: a body announced larger
    // than a submission may be is refused before it is read.
    if (Number(request.get('content-length') ?? 0) > MAX_SUBMISSION_BODY_BYTES) {
      throw new AppException(
        ErrorCode.PayloadTooLarge,
        `A submission may be at most ${MAX_SUBMISSION_UPLOAD_BYTES / 1024 / 1024} MB of files`,
        {
          limit_bytes: MAX_SUBMISSION_UPLOAD_BYTES,
        },
      );
    }
    try {
      return await this.multer.intercept(context, next);
    } catch (error) {
      throw multipartError(error, request);
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

/** What multer's memory storage hands over (a subset of Express.Multer.File; @types/multer is not installed). */
export interface ReceivedFile {
  fieldname: string;
  originalname: string;
  mimetype: string;
  buffer: Buffer;
}

export interface UploadedAttachment {
  field: string;
  filename: string;
  contentType: string;
  size: number;
  content: Buffer;
}

/** Names that run or render when opened, whatever the bytes (a `.html` with innocent text today). */
const REFUSED_EXTENSIONS = new Set(
  (
    'exe dll bat cmd com scr pif cpl msi msp ps1 vbs vbe js jse mjs wsf hta jar sh app apk lnk reg chm ' +
    'html htm xhtml xht shtml svg svgz'
  ).split(' '),
);

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

function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return dot < 0 ? '' : filename.slice(dot + 1).toLowerCase();
}

function contentTypeOf(sniffed: string | undefined, declared: string): string {
  if (sniffed) return sniffed;
  const type = declared.trim().toLowerCase();
  return MIME_SYNTAX.test(type) && !ACTIVE_MIME.test(type) ? type : 'application/octet-stream';
}

/**
 * Checks a submission's files: 413 over 10 MB in all, 400 naming each refused file's field for programs and
 * documents a browser would run (by the bytes, or by the name). The browser's Content-Type is not trusted.
 */
export async function checkUploads(files: ReceivedFile[] | undefined): Promise<UploadedAttachment[]> {
  if (!files?.length) return [];
  const total = files.reduce((sum, file) => sum + file.buffer.length, 0);
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

  const problems: { field: string; message: string }[] = [];
  const attachments: UploadedAttachment[] = [];
  for (const file of files) {
    const filename = sanitizeFilename(file.originalname);
    const sniffed = await sniffUpload(file.buffer);
    const extension = extensionOf(filename);
    const refusal = sniffed.refusal
      ? `it is ${sniffed.refusal}`
      : REFUSED_EXTENSIONS.has(extension)
        ? `.${extension} files are not accepted`
        : null;
    if (refusal) {
      problems.push({ field: file.fieldname, message: `"${filename}" is refused: ${refusal}` });
      continue;
    }
    attachments.push({
      field: file.fieldname,
      filename,
      contentType: contentTypeOf(sniffed.mime, file.mimetype),
      size: file.buffer.length,
      content: file.buffer,
    });
  }
  if (problems.length > 0) throw AppException.validation(problems);
  return attachments;
}
