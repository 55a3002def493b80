import { fileTypeFromBuffer } from 'file-type';
import { type AttachmentStream, MailParser, type MessageText } from 'mailparser';
import { diskImageType } from '../../file-checks/disk-images';
import { PROGRAM_TYPES } from '../../file-checks/program-types';
import { HeaderField, headerBounds, headerFields, headerSection, rawFields } from '../received-message';

/** An attachment refused by what its bytes are. */
export interface RefusedAttachment {
  /** Its file name as the message gives it, when it gives one. */
  filename: string | null;
  /** `a program or installer (exe)`, `a disk image (iso)`. */
  kind: string;
}

/**
 * Attached messages (message/rfc822, a forward as attachment) are opened this deep; parts below are left to clamd,
 * which opens 17 levels.
 */
const MAX_MESSAGE_DEPTH = 5;

/**
 * The first attachment of `source` that is a program or installer (the form uploads' list) or a disk image, by its
 * decoded bytes: the file name and the declared type play no part. Attached messages are opened too. One attachment
 * is held in memory at a time. Rejects when mailparser cannot read the message: what cannot be checked is not taken.
 */
export async function refusedAttachment(source: Buffer, depth = 0): Promise<RefusedAttachment | null> {
  const fields = headerFields(headerSection(source));
  // Most mail is one text part, which is then not parsed at all (mailparser takes about a second per 20 MB).
  if (holdsNoAttachment(fields)) return null;
  const types = fields.filter((f) => f.name.toLowerCase() === 'content-type');
  const refused = await firstRefused(source, depth);
  if (refused || types.length < 2) return refused;
  // Readers disagree on which of several Content-Type fields wins (mailparser takes the first): read it by the last too.
  return firstRefused(keepingLastContentType(source), depth);
}

async function firstRefused(source: Buffer, depth: number): Promise<RefusedAttachment | null> {
  let refused: RefusedAttachment | null = null;
  const check = async (part: AttachmentStream, bytes: Buffer) => {
    if (refused) return;
    if (part.contentType !== 'message/rfc822') {
      const kind = await kindOf(bytes);
      if (kind) refused ??= { filename: part.filename ?? null, kind };
    } else if (depth < MAX_MESSAGE_DEPTH) {
      refused ??= await refusedAttachment(bytes, depth + 1);
    }
  };
  // mailparser waits for release() before the next part, but may end the message before the last check is done.
  const checks: Promise<void>[] = [];
  const parser = new MailParser({ skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true });
  parser.on('data', (part: AttachmentStream | MessageText) => {
    if (part.type !== 'attachment') return;
    const chunks: Buffer[] = [];
    part.content.on('data', (chunk: Buffer) => {
      if (!refused) chunks.push(chunk);
    });
    checks.push(
      new Promise<void>((resolve, reject) => {
        part.content.on('end', () => {
          check(part, Buffer.concat(chunks))
            .finally(() => part.release())
            .then(resolve, reject);
        });
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    parser.once('end', resolve);
    parser.once('error', reject);
    parser.end(source);
  });
  await Promise.all(checks);
  return refused;
}

/**
 * Whether no mail reader finds an attachment in a message with these top-level fields: every Content-Type field
 * (none: text/plain) plain text or HTML without a file name, and no Content-Disposition (mailparser takes a text part
 * with `attachment` or a file name as a file, and other text types such as text/calendar as attachments).
 */
function holdsNoAttachment(fields: readonly HeaderField[]): boolean {
  return fields.every((field) => {
    const name = field.name.toLowerCase();
    if (name === 'content-disposition') return false;
    return name !== 'content-type' || (/^text\/(plain|html)\s*(;|$)/i.test(field.value) && !/name\*?\s*=/i.test(field.value));
  });
}

/** The message with only the last of its top-level Content-Type fields. */
function keepingLastContentType(source: Buffer): Buffer {
  const { end } = headerBounds(source);
  const fields = rawFields(source.subarray(0, end).toString('latin1'));
  const last = fields.map((f) => f.name.toLowerCase() === 'content-type').lastIndexOf(true);
  const kept = fields.filter((f, i) => f.name.toLowerCase() !== 'content-type' || i === last);
  return Buffer.concat([Buffer.from(kept.map((f) => f.raw).join(''), 'latin1'), source.subarray(end)]);
}

/** Why these bytes are refused, or undefined. */
async function kindOf(bytes: Buffer): Promise<string | undefined> {
  const type = await fileTypeFromBuffer(bytes);
  if (type && PROGRAM_TYPES.has(type.ext)) return `a program or installer (${type.ext})`;
  const image = diskImageType(bytes);
  return image ? `a disk image (${image})` : undefined;
}
