import { open, readFile } from 'node:fs/promises';
import { diskImageType } from '../../file-checks/disk-images';
import { pdfScripts } from './pdf-actions';
import { PROVIDER_REFUSED_TYPES, type Refusal, refusalByName } from './refused-types';
import { sniffUploadFile } from './upload-sniff';
import { inspectZip } from './zip-inspection';

/** What an upload is, by its bytes and its name, and every reason to refuse it. */
export interface Inspection {
  /** The MIME type the bytes show; undefined when they show none. */
  mime?: string;
  /** Whether the bytes are UTF-8 text without control characters (and, checked apart, nothing a browser runs). */
  text: boolean;
  refusals: Refusal[];
}

/** file-type's names of archives whose contents are not read here: refused unless the form allows them. */
const UNREAD_ARCHIVES = new Set(['7z', 'rar', 'tar', 'gz', 'bz2', 'xz', 'cab', 'zst', 'lzh', 'Z', 'ace', 'arj']);
/** file-type's names of Office documents whose [Content_Types].xml declares macros. */
const MACRO_DOCUMENTS = new Set(['docm', 'dotm', 'xlsm', 'xltm', 'pptm', 'potm', 'ppsm']);
/** Enough of the head for file-type, text detection and ISO/UDF volume descriptors (sector 16 and after). */
const HEAD_BYTES = 64 * 1024;
/** A zip's end record (22 bytes and a comment of at most 64 KB) lies in this much of the file's end. */
const ZIP_TAIL_BYTES = 22 + 0xffff;
const ZIP_END_SIGNATURE = Buffer.from('PK\x05\x06', 'latin1');
/** PDF readers take `%PDF` anywhere in the first KB. */
const PDF_HEADER_WITHIN = 1024;

/**
 * A zip: its first local file header at the start, or an end-of-central-directory record in the tail, which is what
 * unzip tools (7-Zip, yauzl) read from: a zip after a prefix (a picture, a self-extractor stub) is a zip to them.
 */
export function looksLikeZip(head: Buffer, tail: Buffer): boolean {
  if (head[0] === 0x50 && head[1] === 0x4b && ((head[2] === 3 && head[3] === 4) || (head[2] === 5 && head[3] === 6))) return true;
  for (let at = tail.lastIndexOf(ZIP_END_SIGNATURE); at >= 0; at = at > 0 ? tail.lastIndexOf(ZIP_END_SIGNATURE, at - 1) : -1) {
    if (tail.length - at < 22) continue;
    // A plausible record, not four bytes met by chance: one disk holding all the entries.
    const disk = tail.readUInt16LE(at + 4);
    const directoryDisk = tail.readUInt16LE(at + 6);
    const entriesHere = tail.readUInt16LE(at + 8);
    const entries = tail.readUInt16LE(at + 10);
    if (disk === directoryDisk && (disk === 0 || disk === 0xffff) && entriesHere === entries) return true;
  }
  return false;
}

/** A PDF by its header, where readers look for it (file-type knows it only at byte 0). */
const isPdf = (head: Buffer) => head.subarray(0, PDF_HEADER_WITHIN).includes('%PDF');

/**
 * Inspects an upload stored at `path`, named `filename` (already cleaned): programs and active documents (never
 * accepted), the names and kinds Gmail and Outlook refuse, disk images by their bytes, zips one level down (Office
 * documents included: VBA macros), PDFs that run JavaScript by themselves, archives whose contents cannot be read here.
 */
export async function inspectUpload(path: string, size: number, filename: string): Promise<Inspection> {
  const sniffed = await sniffUploadFile(path, size);
  if (sniffed.refusal) return { mime: sniffed.mime, text: false, refusals: [{ reason: `it is ${sniffed.refusal}`, type: null }] };
  const refusals: Refusal[] = [];
  const byName = refusalByName(filename);
  if (byName) refusals.push(byName);

  const head = await readAt(path, 0, HEAD_BYTES);
  const tail = size > head.length ? await readAt(path, Math.max(0, size - ZIP_TAIL_BYTES), ZIP_TAIL_BYTES) : head;
  const image = diskImageType(head) ?? (size > head.length ? diskImageType(tail.subarray(tail.length - 512)) : null);
  if (image) refusals.push({ reason: `it is a disk image (${image})`, type: image in PROVIDER_REFUSED_TYPES ? image : null });

  const ext = sniffed.ext;
  if (ext && UNREAD_ARCHIVES.has(ext)) {
    const type = ext.toLowerCase();
    refusals.push({
      reason: `it is an archive whose contents cannot be checked (${ext})`,
      type: type in PROVIDER_REFUSED_TYPES ? type : null,
    });
  }
  if (ext && MACRO_DOCUMENTS.has(ext)) refusals.push({ reason: `it is a macro-enabled Office document (${ext})`, type: ext });
  if (looksLikeZip(head, tail)) refusals.push(...(await inspectZip(path, ext)).refusals);
  if (ext === 'pdf' || isPdf(head)) {
    const scripts = await pdfScripts(await readFile(path));
    if (scripts) refusals.push({ reason: PDF_SCRIPT_REASONS[scripts], type: 'pdf-javascript' });
  }
  return { mime: sniffed.mime, text: !sniffed.mime && isPlainText(head), refusals };
}

const PDF_SCRIPT_REASONS = {
  opening: 'it is a PDF that runs JavaScript when opened',
  actions: 'it is a PDF that runs JavaScript by itself (automatic actions)',
  unchecked: 'it is a PDF whose compressed objects are more than can be checked for JavaScript',
} as const;

/** Tab, LF, FF, CR. */
const TEXT_CONTROLS = new Set([0x09, 0x0a, 0x0c, 0x0d]);

/** UTF-8 (a multi-byte character cut at the end of the head counts) without control characters but tab, CR, LF, FF. */
export function isPlainText(bytes: Buffer): boolean {
  if (bytes.some((byte) => (byte < 0x20 && !TEXT_CONTROLS.has(byte)) || byte === 0x7f)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: true });
    return true;
  } catch {
    return false;
  }
}

async function readAt(path: string, position: number, length: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await file.read(buffer, 0, length, position);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}
