import { crc32, deflateRawSync } from 'node:zlib';

/** One file of a test zip. `encrypted` sets the entry's encryption flag (the bytes are then not really encrypted). */
export interface ZipEntrySpec {
  name: string;
  data: Buffer | string;
  encrypted?: boolean;
}

/** A zip archive (deflated entries, no ZIP64) as a mail client or `zip` would write it. */
export function zipOf(entries: ZipEntrySpec[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const data = Buffer.isBuffer(entry.data) ? entry.data : Buffer.from(entry.data);
    const compressed = deflateRawSync(data);
    const flags = 0x0800 | (entry.encrypted ? 0x0001 : 0);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(compressed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, compressed);
    centrals.push(central, name);
    offset += local.length + name.length + compressed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** A PE executable's headers: the DOS stub pointing at `PE\0\0` and an i386 COFF header. */
export function peExecutable(): Buffer {
  const bytes = Buffer.alloc(256);
  bytes.write('MZ', 0, 'latin1');
  bytes.writeUInt32LE(0x80, 0x3c);
  bytes.write('PE\0\0', 0x80, 'latin1');
  bytes.writeUInt16LE(0x014c, 0x84);
  return bytes;
}

/** An ISO 9660 image's start: 16 empty sectors, then a primary volume descriptor. */
export function isoImage(): Buffer {
  const bytes = Buffer.alloc(0x8800);
  bytes[0x8000] = 1;
  bytes.write('CD001', 0x8001, 'latin1');
  return bytes;
}

/** A PDF that runs JavaScript when opened. */
export function pdfWithOpenActionJs(): Buffer {
  return Buffer.from(
    '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R /OpenAction 3 0 R >>\nendobj\n' +
      '2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n' +
      "3 0 obj\n<< /S /JavaScript /JS (app.alert('hi')) >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n",
    'latin1',
  );
}
