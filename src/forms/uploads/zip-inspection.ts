import type { Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { type Entry, open as openZip, type ZipFile } from 'yauzl';
import { diskImageType } from '../../file-checks/disk-images';
import { PROGRAM_TYPES } from '../../file-checks/program-types';
import { type Refusal, refusalByName } from './refused-types';

/** More entries than any form upload needs: a zip of more is refused rather than listed. */
const MAX_ENTRIES = 10_000;
/** The first entries whose bytes are sniffed (a head each): a program renamed `notes.txt` inside a zip. */
const SNIFFED_ENTRIES = 100;
/** What is decompressed of each sniffed entry: enough for file-type and for an ISO's volume descriptors. */
const ENTRY_HEAD_BYTES = 40 * 1024;

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
 * refused name, an entry whose bytes are a program or a disk image, an encrypted entry (what cannot be read is not
 * taken), VBA macros (vbaProject.bin, whatever the document is called). A zip that cannot be read is refused.
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
  let sniffed = 0;
  for await (const entry of entriesOf(zip)) {
    const name = entry.fileName;
    if (name.endsWith('/')) continue;
    const inside = `"${name.split('/').pop()}" inside`;
    if (entry.isEncrypted()) {
      refusals.push({ reason: `it holds an encrypted file (${name}) that cannot be checked`, type: null });
      continue;
    }
    if (/(^|\/)vbaProject\.bin$/i.test(name)) {
      const type = macroDocumentType(name, documentExt);
      refusals.push({ reason: `it is a macro-enabled Office document (${type})`, type });
      continue;
    }
    const byName = refusalByName(name);
    if (byName) refusals.push({ reason: `${inside}: ${byName.reason}`, type: byName.type });
    if (sniffed < SNIFFED_ENTRIES && entry.uncompressedSize > 0 && entry.canDecodeFileData()) {
      sniffed++;
      const byBytes = await bytesRefusal(await entryHead(zip, entry));
      if (byBytes) refusals.push({ reason: `${inside} is ${byBytes.reason}`, type: byBytes.type });
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
    openZip(path, { lazyEntries: true, autoClose: false }, (err, zip) => (err ? reject(err) : resolve(zip))),
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

/** The first ENTRY_HEAD_BYTES of an entry, decompressed; the rest is never read. */
async function entryHead(zip: ZipFile, entry: Entry): Promise<Buffer> {
  const stream = await new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (err, s) => (err ? reject(err) : resolve(s))));
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of stream) {
      chunks.push(chunk as Buffer);
      length += (chunk as Buffer).length;
      if (length >= ENTRY_HEAD_BYTES) break;
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks).subarray(0, ENTRY_HEAD_BYTES);
}
