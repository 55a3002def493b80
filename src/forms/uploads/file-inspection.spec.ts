import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { isoImage, pdfWithOpenActionJs, peExecutable, zipOf } from '../../../test/support/zip-file';
import { AppException } from '../../common/errors/app.exception';
import { isPlainText } from './file-inspection';
import { pdfRunsJavaScript } from './pdf-actions';
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

  it('refuses PDFs that run JavaScript on opening, in plain or compressed object streams and with #-escaped names', async () => {
    expect(await refusalOf(file('cv.pdf', pdfWithOpenActionJs()))).toMatch(/PDF that runs JavaScript/);
    expect(
      pdfRunsJavaScript(Buffer.from('%PDF-1.7\n1 0 obj << /AA << /O 2 0 R >> >> endobj 2 0 obj << /S /J#61vaScript /J#53 (x) >> endobj')),
    ).toBe(true);
    const packed = deflateSync('<< /Type /Catalog /OpenAction 3 0 R >> << /S /JavaScript /JS (app.alert(1)) >>');
    const objectStream = Buffer.concat([
      Buffer.from('%PDF-1.5\n5 0 obj\n<< /Type /ObjStm /N 2 /First 10 /Filter /FlateDecode /Length ' + packed.length + ' >>\nstream\n'),
      packed,
      Buffer.from('\nendstream\nendobj\n%%EOF\n'),
    ]);
    expect(pdfRunsJavaScript(objectStream)).toBe(true);
    // JavaScript without an automatic action (a button), or an action without JavaScript, is left alone.
    expect(pdfRunsJavaScript(Buffer.from('%PDF-1.4\n<< /S /JavaScript /JS (x) >>'))).toBe(false);
    expect(pdfRunsJavaScript(Buffer.from('%PDF-1.4\n<< /OpenAction [3 0 R /Fit] /AAPL 1 >>'))).toBe(false);
  });
});

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
