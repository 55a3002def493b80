import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import {
  asMailAttachments,
  checkUploads,
  MAX_SUBMISSION_UPLOAD_BYTES,
  ReceivedFile,
  readUploads,
  sanitizeFilename,
} from './submission-uploads';

const directory = mkdtempSync(join(tmpdir(), 'uploads-spec-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let files = 0;

/** A received upload, written where multer's storage would have put it. */
function file(
  originalname: string,
  content: Buffer | string,
  mimetype = 'application/octet-stream',
  fieldname = 'attachment',
): ReceivedFile {
  const bytes = Buffer.isBuffer(content) ? content : Buffer.from(content);
  const path = join(directory, `upload-${++files}`);
  writeFileSync(path, bytes);
  return { fieldname, originalname, mimetype, path, size: bytes.length };
}

/** A PE executable's headers: the DOS stub pointing at `PE\0\0` and an i386 COFF header. */
function peExecutable(): Buffer {
  const bytes = Buffer.alloc(256);
  bytes.write('MZ', 0, 'latin1');
  bytes.writeUInt32LE(0x80, 0x3c);
  bytes.write('PE\0\0', 0x80, 'latin1');
  bytes.writeUInt16LE(0x014c, 0x84);
  return bytes;
}

function elfExecutable(): Buffer {
  return Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(56)]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A valid 1×1 grey PNG. */
function png(): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0);
  header.writeUInt32BE(1, 4);
  header.writeUInt8(8, 8); // bit depth
  header.writeUInt8(0, 9); // greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(Buffer.from([0, 0x80]))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

async function refusal(files: ReceivedFile[]): Promise<AppException> {
  const error = await checkUploads(files).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppException);
  return error as AppException;
}

async function refusedFields(files: ReceivedFile[]): Promise<{ field: string; message: string }[]> {
  const error = await refusal(files);
  expect(error.code).toBe(ErrorCode.ValidationFailed);
  return error.details!.fields as { field: string; message: string }[];
}

describe('checkUploads', () => {
  it('refuses a PE executable named invoice.pdf, naming its field and file', async () => {
    const fields = await refusedFields([file('invoice.pdf', peExecutable(), 'application/pdf', 'invoice')]);
    expect(fields).toEqual([{ field: 'invoice', message: '"invoice.pdf" is refused: it is a program or installer (exe)' }]);
  });

  it('refuses an ELF binary whatever it is called', async () => {
    const fields = await refusedFields([file('notes.txt', elfExecutable(), 'text/plain')]);
    expect(fields[0].message).toContain('(elf)');
  });

  it('refuses an HTML page by its bytes and by its name', async () => {
    expect((await refusedFields([file('page.html', '<html><body>hi</body></html>', 'text/html')]))[0].message).toContain('HTML document');
    expect((await refusedFields([file('page.txt', '\ufeff\r\n<!DOCTYPE html>\n<p>x</p>')]))[0].message).toContain('HTML document');
    expect((await refusedFields([file('page.html', 'just words', 'text/plain')]))[0].message).toBe(
      '"page.html" is refused: .html files are not accepted',
    );
  });

  it('refuses a .txt whose bytes start with a script tag after whitespace', async () => {
    const fields = await refusedFields([file('readme.txt', '  <script>alert(1)</script>', 'text/plain')]);
    expect(fields[0].message).toContain('HTML document');
  });

  it('reads past the head of a file when what decides lies there', async () => {
    const padding = ' \n'.repeat(50 * 1024);
    expect((await refusedFields([file('notes.txt', `${padding}<script>alert(1)</script>`)]))[0].message).toContain('HTML document');
    const comment = `<!-- ${'x'.repeat(100 * 1024)} -->`;
    const xml = `<?xml version="1.0"?>\n${comment}\n<svg xmlns="http://www.w3.org/2000/svg"/>`;
    expect((await refusedFields([file('data.xml', xml)]))[0].message).toContain('XML document with HTML, SVG or script');
    await expect(checkUploads([file('notes.txt', `${'words '.repeat(20_000)}<script>`)])).resolves.toHaveLength(1);
  });

  it('refuses HTML encoded as UTF-16', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<HTML>\n<b>x</b>', 'utf16le')]);
    expect((await refusedFields([file('letter.txt', utf16)]))[0].message).toContain('HTML document');
  });

  it('refuses SVG images, bare or under an XML prolog', async () => {
    const bare = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>';
    const prolog = '<?xml version="1.0"?>\n<!-- drawn by hand -->\n<svg xmlns="http://www.w3.org/2000/svg"/>';
    expect((await refusedFields([file('logo.png', bare, 'image/png')]))[0].message).toContain('SVG image');
    expect((await refusedFields([file('logo.png', prolog, 'image/png')]))[0].message).toContain('XML document with HTML, SVG or script');
    expect((await refusedFields([file('logo.svg', 'not really an svg')]))[0].message).toContain('.svg files');
  });

  it('refuses #! scripts and names that run when opened', async () => {
    expect((await refusedFields([file('install', '#!/bin/sh\nrm -rf ~\n')]))[0].message).toContain('a script (#!)');
    expect((await refusedFields([file('run.BAT', 'echo hi')]))[0].message).toContain('.bat files');
    // Windows drops the trailing dot: this opens as run.exe.
    expect((await refusedFields([file('run.exe.', 'hello')]))[0].message).toBe('"run.exe" is refused: .exe files are not accepted');
  });

  it('lists every refused file at once', async () => {
    const fields = await refusedFields([
      file('ok.txt', 'fine', 'text/plain', 'a'),
      file('x.exe', peExecutable(), 'application/octet-stream', 'b'),
      file('y.js', 'alert(1)', 'text/javascript', 'c'),
    ]);
    expect(fields.map((f) => f.field)).toEqual(['b', 'c']);
  });

  it('accepts a PNG and a PDF with the sniffed type, whatever the browser declared', async () => {
    const pdf = '%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n';
    const image = png();
    const received = [file('photo.png', image, 'text/html', 'photo'), file('cv.pdf', pdf, 'application/octet-stream', 'cv')];
    const accepted = await checkUploads(received);
    expect(accepted).toEqual([
      { field: 'photo', filename: 'photo.png', contentType: 'image/png', size: image.length, path: received[0].path },
      { field: 'cv', filename: 'cv.pdf', contentType: 'application/pdf', size: pdf.length, path: received[1].path },
    ]);
    expect(asMailAttachments(accepted, await readUploads(accepted))).toEqual([
      { filename: 'photo.png', contentType: 'image/png', content: image.toString('base64') },
      { filename: 'cv.pdf', contentType: 'application/pdf', content: Buffer.from(pdf).toString('base64') },
    ]);
  });

  it('keeps a declared type for plain text unless it is one a browser would run', async () => {
    const [plain, claimedHtml, garbage] = await checkUploads([
      file('notes.txt', 'Dear team,\n<b> is bold in HTML.', 'text/plain'),
      file('notes2.txt', 'plain words', 'text/html'),
      file('notes3.txt', 'plain words', 'text/plain\r\nX-Evil: 1'),
    ]);
    expect(plain.contentType).toBe('text/plain');
    expect(claimedHtml.contentType).toBe('application/octet-stream');
    expect(garbage.contentType).toBe('application/octet-stream');
  });

  it('accepts XML that carries no page, image or script', async () => {
    const [xml] = await checkUploads([file('data.xml', '<?xml version="1.0"?>\n<order id="1"><item>pen</item></order>', 'text/xml')]);
    expect(xml.contentType).toBe('application/xml');
  });

  it('answers 413 when the files together exceed 10 MB', async () => {
    const half = Buffer.alloc(MAX_SUBMISSION_UPLOAD_BYTES / 2 + 1);
    const error = await refusal([file('a.bin', half), file('b.bin', half)]);
    expect(error.code).toBe(ErrorCode.PayloadTooLarge);
    expect(error.status).toBe(413);
    await expect(checkUploads([file('a.bin', Buffer.alloc(MAX_SUBMISSION_UPLOAD_BYTES))])).resolves.toHaveLength(1);
  });

  it('returns nothing for no files', async () => {
    await expect(checkUploads(undefined)).resolves.toEqual([]);
    await expect(checkUploads([])).resolves.toEqual([]);
  });
});

describe('sanitizeFilename', () => {
  it.each([
    ['../../etc/passwd', 'passwd'],
    ['C:\\Users\\ann\\Desktop\\cv.pdf', 'cv.pdf'],
    ['a\r\nX-Evil: 1".pdf', 'aX-Evil: 1.pdf'],
    ['O\'Brien "final".docx', 'OBrien final.docx'],
    ['invoice\u202Egpj.exe', 'invoicegpj.exe'],
    ['  .hidden  ', 'hidden'],
    ['..', 'upload'],
    ['', 'upload'],
    ['\u0000\u0007', 'upload'],
    ['résumé.pdf', 'résumé.pdf'],
  ])('%j becomes %j', (input, expected) => {
    expect(sanitizeFilename(input)).toBe(expected);
  });

  it('cuts long names to 200 characters, keeping the extension', () => {
    const name = sanitizeFilename(`${'é'.repeat(300)}.pdf`);
    expect(Array.from(name)).toHaveLength(200);
    expect(name.endsWith('é.pdf')).toBe(true);
    expect(Array.from(sanitizeFilename('😀'.repeat(250)))).toHaveLength(200);
  });
});
