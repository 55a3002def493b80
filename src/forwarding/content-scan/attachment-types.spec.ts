import { refusedAttachment } from './attachment-types';

const PROGRAM = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(510, 0x90)]);
const PDF = Buffer.from('%PDF-1.7\n1 0 obj\n<< >>\nendobj\ntrailer\n<< >>\n%%EOF\n');

function part(filename: string, bytes: Buffer, type = 'application/octet-stream'): string {
  return [
    `Content-Type: ${type}; name="${filename}"`,
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment; filename="${filename}"`,
    '',
    bytes.toString('base64'),
  ].join('\r\n');
}

function multipart(boundary: string, parts: string[], headers: string[] = ['From: a@origin.test', 'Subject: files']): string {
  return [
    ...headers,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    ...parts.flatMap((p) => [`--${boundary}`, p]),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

const text = 'Content-Type: text/plain\r\n\r\nSee the files.';

describe('refusedAttachment', () => {
  it('takes a message with ordinary attachments, or none', async () => {
    expect(await refusedAttachment(Buffer.from(multipart('b', [text, part('report.pdf', PDF, 'application/pdf')])))).toBeNull();
    expect(await refusedAttachment(Buffer.from('From: a@origin.test\r\nSubject: hi\r\n\r\nHello.\r\n'))).toBeNull();
  });

  it('refuses a program by its bytes, whatever its name and declared type', async () => {
    const source = multipart('b', [text, part('report.pdf', PDF), part('invoice.pdf', PROGRAM, 'application/pdf')]);
    expect(await refusedAttachment(Buffer.from(source))).toEqual({ filename: 'invoice.pdf', kind: 'a program or installer (exe)' });
  });

  it('refuses a disk image file-type does not know', async () => {
    const iso = Buffer.alloc(0x8800);
    iso.write('CD001', 0x8001, 'latin1');
    expect(await refusedAttachment(Buffer.from(multipart('b', [text, part('photos.img', iso)])))).toEqual({
      filename: 'photos.img',
      kind: 'a disk image (iso)',
    });
  });

  it('reads a message whose body is one attachment, and one whose type fields disagree', async () => {
    const single = `From: a@origin.test\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n${PROGRAM.toString('base64')}\r\n`;
    expect(await refusedAttachment(Buffer.from(single))).toMatchObject({ kind: 'a program or installer (exe)' });
    const disagreeing = multipart('b', [text, part('a.bin', PROGRAM)], ['From: a@origin.test', 'Content-Type: text/plain']);
    expect(await refusedAttachment(Buffer.from(disagreeing))).toMatchObject({ kind: 'a program or installer (exe)' });
  });

  it('reads the fields mail readers read: a space before the colon, a folded name, several type fields', async () => {
    const files = [text, part('a.bin', PROGRAM)];
    for (const type of ['Content-Type : multipart/mixed; boundary="b"', 'Content-Type\r\n : multipart/mixed; boundary="b"']) {
      const source = multipart('b', files).replace('Content-Type: multipart/mixed; boundary="b"', type);
      expect(source).toContain(type);
      expect(await refusedAttachment(Buffer.from(source))).toMatchObject({ kind: 'a program or installer (exe)' });
    }
    // A header with LF line ends, and a body that holds a CRLF empty line.
    const lf = multipart('b', files, ['From: a@origin.test']).replace(/\r\n/, '\n').replace('MIME-Version: 1.0\r\n', 'MIME-Version: 1.0\n');
    expect(await refusedAttachment(Buffer.from(lf))).toMatchObject({ kind: 'a program or installer (exe)' });
  });

  it('finds a file in a single text part that mail readers show as an attachment', async () => {
    const body = `Content-Transfer-Encoding: base64\r\n\r\n${PROGRAM.toString('base64')}\r\n`;
    for (const fields of [
      'Content-Type: text/plain\r\nContent-Disposition: attachment; filename="notes.txt"',
      'Content-Disposition: inline; filename="report.pdf"',
      'Content-Type: text/calendar',
    ]) {
      expect(await refusedAttachment(Buffer.from(`From: a@origin.test\r\n${fields}\r\n${body}`))).toMatchObject({
        kind: 'a program or installer (exe)',
      });
    }
  });

  it('rejects a message mailparser cannot read, rather than taking it unchecked', async () => {
    const huge = part('a.bin', PROGRAM).replace(
      'Content-Transfer-Encoding',
      `X-Padding: ${'x'.repeat(1024 * 1024 + 1)}\r\nContent-Transfer-Encoding`,
    );
    await expect(refusedAttachment(Buffer.from(multipart('b', [text, huge])))).rejects.toThrow(/header size/);
  });

  it('opens attached messages, naming the file inside', async () => {
    const inner = multipart('inner', [text, part('setup.scr', PROGRAM)], ['From: b@origin.test', 'Subject: inner']);
    const outer = multipart('outer', [text, `Content-Type: message/rfc822\r\n\r\n${inner}`]);
    expect(await refusedAttachment(Buffer.from(outer))).toEqual({ filename: 'setup.scr', kind: 'a program or installer (exe)' });
  });
});
