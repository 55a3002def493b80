import { deflateSync } from 'node:zlib';
import { MAX_INFLATED_BYTES, pdfScripts } from './pdf-actions';

/** A PDF whose objects are packed in FlateDecode object streams, one per `packed` content (a zlib stream each). */
function pdfOfObjectStreams(packed: Buffer[]): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.5\n')];
  packed.forEach((data, i) => {
    parts.push(
      Buffer.from(`${i + 5} 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length ${data.length} >>\nstream\n`, 'latin1'),
      data,
      Buffer.from('\nendstream\nendobj\n', 'latin1'),
    );
  });
  parts.push(Buffer.from('%%EOF\n'));
  return Buffer.concat(parts);
}

const SCRIPTED = '<< /Type /Catalog /OpenAction 3 0 R >> << /S /JavaScript /JS (app.alert(1)) >>';

describe('pdfScripts', () => {
  it('finds JavaScript and automatic actions in plain text, in object streams, and under #-escaped names', async () => {
    expect(
      await pdfScripts(Buffer.from('%PDF-1.7\n1 0 obj << /AA << /O 2 0 R >> >> endobj 2 0 obj << /S /J#61vaScript /J#53 (x) >> endobj')),
    ).toBe('actions');
    expect(await pdfScripts(pdfOfObjectStreams([deflateSync(SCRIPTED)]))).toBe('opening');
    // JavaScript without an automatic action (a button), or an action without JavaScript, is left alone.
    expect(await pdfScripts(Buffer.from('%PDF-1.4\n<< /S /JavaScript /JS (x) >>'))).toBeNull();
    expect(await pdfScripts(Buffer.from('%PDF-1.4\n<< /OpenAction [3 0 R /Fit] /AAPL 1 >>'))).toBeNull();
  });

  it('reads the second of two object streams (endstream is not the start of one)', async () => {
    const pdf = pdfOfObjectStreams([deflateSync('<< /Type /Pages /Kids [] /Count 0 >>'), deflateSync(SCRIPTED)]);
    expect(await pdfScripts(pdf)).toBe('opening');
  });

  it('reads an object stream whose dictionary is escaped or whose data holds the word endstream', async () => {
    const escaped = pdfOfObjectStreams([deflateSync(SCRIPTED)])
      .toString('latin1')
      .replace('/ObjStm', '/Obj#53tm');
    expect(await pdfScripts(Buffer.from(escaped, 'latin1'))).toBe('opening');
    // Stored (level 0) deflate blocks keep the text as it is, the word endstream before the script included.
    const storing = deflateSync(`endstream ${SCRIPTED}`, { level: 0 });
    expect(storing.includes('endstream')).toBe(true);
    expect(await pdfScripts(pdfOfObjectStreams([storing]))).toBe('opening');
  });

  it('spends one budget on all object streams, oversized and damaged ones included, and leaves the rest unchecked', async () => {
    const bomb = deflateSync(Buffer.alloc(MAX_INFLATED_BYTES + 1024 * 1024));
    // The script in the last stream is never reached: the budget ran out first (unchecked, not 'opening').
    expect(await pdfScripts(pdfOfObjectStreams([...Array<Buffer>(50).fill(bomb), deflateSync(SCRIPTED)]))).toBe('unchecked');
    // Damaged: 8 MB of zeros, then bytes that are no deflate data.
    const damaged = Buffer.concat([deflateSync(Buffer.alloc(8 * 1024 * 1024)).subarray(0, -4), Buffer.alloc(64, 0xff)]);
    expect(await pdfScripts(pdfOfObjectStreams([...Array<Buffer>(50).fill(damaged), deflateSync(SCRIPTED)]))).toBe('unchecked');
  });

  it('leaves a PDF of more object streams than a writer makes unchecked', async () => {
    const small = deflateSync('<< /Type /Pages >>');
    expect(await pdfScripts(pdfOfObjectStreams(Array<Buffer>(2001).fill(small)))).toBe('unchecked');
    expect(await pdfScripts(pdfOfObjectStreams(Array<Buffer>(20).fill(small)))).toBeNull();
  });
});
