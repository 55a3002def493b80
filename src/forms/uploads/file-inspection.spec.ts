import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isoImage, pdfWithOpenActionJs, peExecutable, zipOf } from '../../../test/support/zip-file';
import { AppException } from '../../common/errors/app.exception';
import { isPlainText } from './file-inspection';
import { checkUploads, ReceivedFile } from './submission-uploads';

const directory = mkdtempSync(join(tmpdir(), 'inspection-spec-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let files = 0;

function file(originalname: string, content: Buffer | string, mimetype = 'application/octet-stream'): ReceivedFile {
  const bytes = Buffer.isBuffer(content) ? content : Buffer.from(content);
  const path = join(directory, `upload-${++files}`);
  writeFileSync(path, bytes);
  return { fieldname: 'attachment', originalname, mimetype, path, size: bytes.length };
}

/** The message of the 400 refusing the one file, or null when it is accepted. */
async function refusalOf(received: ReceivedFile, allowed: string[] = []): Promise<string | null> {
  try {
    await checkUploads([received], allowed);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(AppException);
    const [problem] = (err as AppException).details!.fields as { field: string; message: string }[];
    return problem.message;
  }
}

describe('uploads mail providers refuse', () => {
  it.each(['notes.one', 'site.url', 'app.desktop', 'page.mht', 'setup.msix', 'disk.vhd', 'macro.docm', 'book.xlsm', 'backup.7z'])(
    'refuses %s by its name',
    async (name) => {
      expect(await refusalOf(file(name, 'plain words'))).toMatch(/files are not accepted/);
    },
  );

  it('refuses a disk image by its bytes, whatever it is called, unless the form allows iso', async () => {
    expect(await refusalOf(file('holiday.jpg', isoImage()))).toMatch(/a disk image \(iso\)/);
    expect(await refusalOf(file('disk.iso', isoImage()), ['iso'])).toBeNull();
  });

  it('refuses a zip holding a refused name, a program by its bytes, or an encrypted entry', async () => {
    expect(
      await refusalOf(
        file(
          'files.zip',
          zipOf([
            { name: 'readme.txt', data: 'hi' },
            { name: 'setup.exe', data: 'x' },
          ]),
        ),
      ),
    ).toMatch(/"setup.exe" inside: .exe files are not accepted/);
    expect(await refusalOf(file('files.zip', zipOf([{ name: 'invoice.txt', data: peExecutable() }])))).toMatch(
      /"invoice.txt" inside is a program or installer \(exe\)/,
    );
    expect(await refusalOf(file('files.zip', zipOf([{ name: 'secret.pdf', data: '%PDF', encrypted: true }])))).toMatch(/encrypted/);
    expect(await refusalOf(file('files.zip', zipOf([{ name: 'cd/disk.iso', data: isoImage() }])))).toMatch(/disk image/);
    expect(await refusalOf(file('files.zip', zipOf([{ name: 'cd/disk.iso', data: isoImage() }])), ['iso'])).toBeNull();
  });

  it('accepts a zip of ordinary files, and does not open a zip inside a zip', async () => {
    const inner = zipOf([{ name: 'setup.exe', data: peExecutable() }]);
    expect(
      await refusalOf(
        file(
          'photos.zip',
          zipOf([
            { name: 'a.txt', data: 'hello' },
            { name: 'inner.zip', data: inner },
          ]),
        ),
      ),
    ).toBeNull();
  });

  it('refuses an Office document holding VBA macros whatever its name, and a zip that cannot be read', async () => {
    const docx = zipOf([
      { name: '[Content_Types].xml', data: '<?xml version="1.0"?><Types/>' },
      { name: 'word/document.xml', data: '<w:document/>' },
      { name: 'word/vbaProject.bin', data: Buffer.alloc(64, 1) },
    ]);
    expect(await refusalOf(file('report.docx', docx))).toMatch(/macro-enabled Office document \(docm\)/);
    expect(await refusalOf(file('report.docx', docx), ['docm'])).toBeNull();
    expect(await refusalOf(file('broken.zip', Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(100)])))).toMatch(/cannot be read/);
  });

  it('refuses archives whose contents cannot be read here unless the form allows them', async () => {
    const gzip = Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4]);
    expect(await refusalOf(file('data.bin', gzip))).toMatch(/archive whose contents cannot be checked \(gz\)/);
    expect(await refusalOf(file('data.gz', gzip), ['gz'])).toBeNull();
  });

  it('never accepts programs, even when a form names their extension', async () => {
    expect(await refusalOf(file('tool.exe', peExecutable()), ['iso'])).toMatch(/program/);
  });

  it('refuses PDFs that run JavaScript by themselves unless the form allows pdf-javascript', async () => {
    expect(await refusalOf(file('cv.pdf', pdfWithOpenActionJs()))).toMatch(/PDF that runs JavaScript when opened/);
    expect(await refusalOf(file('cv.pdf', pdfWithOpenActionJs()), ['pdf-javascript'])).toBeNull();
    const fillable = Buffer.from('%PDF-1.7\n1 0 obj << /AA << /C 2 0 R >> >> endobj 2 0 obj << /S /JavaScript /JS (calc()) >> endobj');
    expect(await refusalOf(file('form.pdf', fillable))).toMatch(/PDF that runs JavaScript by itself/);
    expect(await refusalOf(file('form.pdf', fillable), ['pdf-javascript'])).toBeNull();
  });

  it('reads a PDF whose header is not at its first byte, as readers do', async () => {
    const late = Buffer.concat([Buffer.from(' '.repeat(200) + '\n'), pdfWithOpenActionJs()]);
    expect(await refusalOf(file('cv.pdf', late))).toMatch(/PDF that runs JavaScript/);
  });
});

describe('zips after a prefix, and every entry of a zip', () => {
  const jpegHead = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]), Buffer.from('JFIF\0'), Buffer.alloc(300, 7)]);

  it('opens a zip that follows a prefix (a picture, a self-extractor stub), offsets adjusted or not', async () => {
    const zip = zipOf([{ name: 'setup.exe', data: peExecutable() }]);
    expect(await refusalOf(file('photo.jpg', withPrefix(jpegHead, zip)))).toMatch(/"setup.exe" inside/);
    expect(await refusalOf(file('photo.jpg', Buffer.concat([jpegHead, zip])))).toMatch(/zip archive that cannot be read/);
  });

  it('takes a binary file whose tail holds the zip end signature by chance', async () => {
    const bytes = Buffer.concat([
      jpegHead,
      Buffer.from('PK\x05\x06', 'latin1'),
      Buffer.from([1, 0, 2, 0, 3, 0, 4, 0]),
      Buffer.alloc(40, 9),
    ]);
    expect(await refusalOf(file('photo.jpg', bytes))).toBeNull();
  });

  it('sniffs every entry, the 150th included', async () => {
    const entries = Array.from({ length: 149 }, (_, i) => ({ name: `photo-${i}.txt`, data: `photo ${i}` }));
    const zip = zipOf([...entries, { name: 'notes.txt', data: peExecutable() }]);
    expect(await refusalOf(file('photos.zip', zip))).toMatch(/"notes.txt" inside is a program/);
  });

  it('refuses, as unchecked, entries it cannot decompress and what lies past its budget; a form may allow them', async () => {
    const lzma = withMethod(zipOf([{ name: 'notes.txt', data: peExecutable() }]), 14);
    expect(await refusalOf(file('files.zip', lzma))).toMatch(/compressed in a way that cannot be checked/);
    expect(await refusalOf(file('files.zip', lzma), ['unchecked-archive'])).toBeNull();

    const zeros = Buffer.alloc(41 * 1024);
    const many = zipOf(Array.from({ length: 1000 }, (_, i) => ({ name: `log-${i}.txt`, data: zeros })));
    expect(await refusalOf(file('logs.zip', many))).toMatch(/more files than can be checked/);
    expect(await refusalOf(file('logs.zip', many), ['unchecked-archive'])).toBeNull();
  });

  it('lets a form allow encrypted entries, and takes pages inside a zip, but never programs', async () => {
    const encrypted = zipOf([{ name: 'secret.pdf', data: '%PDF', encrypted: true }]);
    expect(await refusalOf(file('files.zip', encrypted), ['encrypted-archive'])).toBeNull();
    expect(await refusalOf(file('site.zip', zipOf([{ name: 'index.html', data: '<html><script>x()</script>' }])))).toBeNull();
    expect(await refusalOf(file('site.zip', zipOf([{ name: 'logo.svg', data: '<svg onload="x()"/>' }])))).toBeNull();
    expect(await refusalOf(file('site.zip', zipOf([{ name: 'run.js', data: 'WScript.Echo(1)' }])))).toMatch(/\.js files are not accepted/);
    const program = zipOf([{ name: 'setup.exe', data: peExecutable(), encrypted: true }]);
    expect(await refusalOf(file('files.zip', program), ['encrypted-archive', 'unchecked-archive'])).toMatch(/\.exe files are not accepted/);
  });
});

/** A zip after a prefix, its offsets moved past it (as `zip -A` writes a self-extractor). */
function withPrefix(prefix: Buffer, zip: Buffer): Buffer {
  const moved = Buffer.from(zip);
  const end = moved.length - 22;
  const directory = moved.readUInt32LE(end + 16);
  moved.writeUInt32LE(directory + prefix.length, end + 16);
  for (let at = directory; at < end; at += 46 + moved.readUInt16LE(at + 28) + moved.readUInt16LE(at + 30) + moved.readUInt16LE(at + 32)) {
    moved.writeUInt32LE(moved.readUInt32LE(at + 42) + prefix.length, at + 42);
  }
  return Buffer.concat([prefix, moved]);
}

/** A one-entry zip whose entry claims compression `method` (14: LZMA). */
function withMethod(zip: Buffer, method: number): Buffer {
  const changed = Buffer.from(zip);
  changed.writeUInt16LE(method, 8);
  changed.writeUInt16LE(method, changed.readUInt32LE(changed.length - 22 + 16) + 10);
  return changed;
}

describe('content types', () => {
  it('gives bytes that show no type application/octet-stream, not the type the browser claimed', async () => {
    const [binary, text, csv] = await checkUploads([
      file('photo.png', Buffer.from([0x00, 0x13, 0x37, 0xff, 0xfe, 0x01, 0x02]), 'image/png'),
      file('notes.txt', 'Grüße, plain words', 'image/png'),
      file('list.csv', 'a;b\n1;2\n', 'text/csv'),
    ]);
    expect(binary.contentType).toBe('application/octet-stream');
    expect(text.contentType).toBe('text/plain');
    expect(csv.contentType).toBe('text/csv');
  });

  it('counts UTF-8 without control characters as text, a multi-byte character cut at the end included', () => {
    expect(isPlainText(Buffer.from('Grüße\r\n\tok'))).toBe(true);
    expect(isPlainText(Buffer.from('Grüße').subarray(0, 3))).toBe(true);
    expect(isPlainText(Buffer.from([0x61, 0x00, 0x62]))).toBe(false);
    expect(isPlainText(Buffer.from([0x61, 0xff, 0x62]))).toBe(false);
  });
});
