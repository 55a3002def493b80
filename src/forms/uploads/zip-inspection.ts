import type { Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { type Entry, open as openZip, type ZipFile } from 'yauzl';
import { diskImageType } from '../../file-checks/disk-images';
import { PROGRAM_TYPES } from '../../file-checks/program-types';
import { type Refusal, refusalByName } from './refused-types';

/** More entries than any form upload needs: a zip of more is refused rather than listed. */
const MAX_ENTRIES = 10_000;
/** What is decompressed of each entry: enough for file-type and for an ISO's volume descriptors. */
const ENTRY_HEAD_BYTES = 40 * 1024;
/**
 * What is decompressed of all entries together (their heads): a zip bomb costs no more, and what lies past it is
 * refused as unchecked. 800 entries of 40 KB; a 10 MB upload of photos or documents stays well under.
 */
export const ENTRY_HEADS_BUDGET = 32 * 1024 * 1024;

/** What is inside a zip (or an Office document, itself a zip) one level down, as far as a refusal goes. */
export interface ZipVerdict {
  /** Every reason to refuse it; empty when there is none. */
  refusals: Refusal[];
}

/** The Office document kind of a zip entry holding VBA macros (`word/vbaProject.bin`): its macro-enabled extension. */
function macroDocumentType(entryName: string, documentExt: string | undefined): string {
  if (documentExt === 'docm' || documentExt === 'xlsm' || documentExt === 'pptm') return documentExt;
  if (/^xl\//i.test(entryName)) return 'xlsm';
  if (/^ppt\//i.test(entryName)) return 'pptm';
  return 'docm';
}

/**
 * Opens the zip at `path` (one level: archives inside are not opened) and lists why it is refused: an entry with a
 * refused name (pages are taken: no browser opens them from the mail), an entry whose bytes are a program or a disk
 * image (every entry's head is read, within ENTRY_HEADS_BUDGET), VBA macros (vbaProject.bin, whatever the document is
 * called), and what cannot be checked: an encrypted entry, an unusual compression, an entry that fails to decompress,
 * entries past the budget (a form may allow these by name). A zip that cannot be read is refused.
 */
export async function inspectZip(path: string, documentExt?: string): Promise<ZipVerdict> {
  let zip: ZipFile;
  try {
    zip = await openZipFile(path);
  } catch (err) {
    return { refusals: [{ reason: `it is a zip archive that cannot be read (${(err as Error).message})`, type: null }] };
  }
  try {
    if (zip.entryCount > MAX_ENTRIES) {
      return { refusals: [{ reason: `it is a zip archive of more than ${MAX_ENTRIES} files`, type: null }] };
    }
    return { refusals: await entryRefusals(zip, documentExt) };
  } catch (err) {
    return { refusals: [{ reason: `it is a zip archive that cannot be read (${(err as Error).message})`, type: null }] };
  } finally {
    zip.close();
  }
}

async function entryRefusals(zip: ZipFile, documentExt: string | undefined): Promise<Refusal[]> {
  const refusals: Refusal[] = [];
  let left = ENTRY_HEADS_BUDGET;
  let overBudget = false;
  for await (const entry of entriesOf(zip)) {
    const name = entry.fileName;
    if (name.endsWith('/')) continue;
    const inside = `"${name.split('/').pop()}" inside`;
    const byName = refusalByName(name, true);
    if (byName) refusals.push({ reason: `${inside}: ${byName.reason}`, type: byName.type });
    if (entry.isEncrypted()) {
      refusals.push({ reason: `it holds an encrypted file (${name}) that cannot be checked`, type: 'encrypted-archive' });
      continue;
    }
    if (/(^|\/)vbaProject\.bin$/i.test(name)) {
      const type = macroDocumentType(name, documentExt);
      refusals.push({ reason: `it is a macro-enabled Office document (${type})`, type });
      continue;
    }
    // Nothing stored: nothing to sniff (inflating no bytes would fail).
    if (entry.compressedSize === 0) continue;
    if (!entry.canDecodeFileData()) {
      refusals.push({ reason: `it holds a file (${name}) compressed in a way that cannot be checked`, type: 'unchecked-archive' });
      continue;
    }
    const limit = Math.min(ENTRY_HEAD_BYTES, left);
    const head = limit > 0 ? await entryHead(zip, entry, limit) : { bytes: Buffer.alloc(0), read: 0, ended: false, unreadable: false };
    left -= head.read;
    const byBytes = head.bytes.length > 0 ? await bytesRefusal(head.bytes) : null;
    if (byBytes) refusals.push({ reason: `${inside} is ${byBytes.reason}`, type: byBytes.type });
    if (head.unreadable) {
      refusals.push({ reason: `it holds a file (${name}) that cannot be read`, type: 'unchecked-archive' });
    } else if (!head.ended && limit < ENTRY_HEAD_BYTES && !overBudget) {
      overBudget = true;
      refusals.push({ reason: 'it holds more files than can be checked', type: 'unchecked-archive' });
    }
  }
  return refusals;
}

/** A program or a disk image, by the head of an entry's bytes. */
async function bytesRefusal(head: Buffer): Promise<Refusal | null> {
  const type = await fileTypeFromBuffer(head);
  if (type && PROGRAM_TYPES.has(type.ext)) return { reason: `a program or installer (${type.ext})`, type: null };
  const image = diskImageType(head);
  return image ? { reason: `a disk image (${image})`, type: image } : null;
}

function openZipFile(path: string): Promise<ZipFile> {
  return new Promise((resolve, reject) =>
    openZip(path, { lazyEntries: true, autoClose: false, validateEntrySizes: false }, (err, zip) => (err ? reject(err) : resolve(zip))),
  );
}

/** The zip's entries one at a time (yauzl's lazy reading). */
async function* entriesOf(zip: ZipFile): AsyncGenerator<Entry> {
  for (;;) {
    const entry = await new Promise<Entry | null>((resolve, reject) => {
      const cleanup = () => zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
      const onEntry = (e: Entry) => (cleanup(), resolve(e));
      const onEnd = () => (cleanup(), resolve(null));
      const onError = (err: Error) => (cleanup(), reject(err));
      zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
      zip.readEntry();
    });
    if (!entry) return;
    yield entry;
  }
}

/**
 * The first `limit` decompressed bytes of an entry (the rest is never read): `read` counts all that was decompressed,
 * `ended` whether that was the whole entry, `unreadable` whether its data failed to decompress.
 */
async function entryHead(
  zip: ZipFile,
  entry: Entry,
  limit: number,
): Promise<{ bytes: Buffer; read: number; ended: boolean; unreadable: boolean }> {
  const chunks: Buffer[] = [];
  let read = 0;
  let stream: Readable | undefined;
  try {
    stream = await new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (err, s) => (err ? reject(err) : resolve(s))));
    for await (const chunk of stream) {
      chunks.push(chunk as Buffer);
      read += (chunk as Buffer).length;
      if (read >= limit) break;
    }
  } catch {
    return { bytes: Buffer.concat(chunks), read, ended: false, unreadable: true };
  } finally {
    stream?.destroy();
  }
  return { bytes: Buffer.concat(chunks).subarray(0, limit), read, ended: read < limit, unreadable: false };
}
