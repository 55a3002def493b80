import { diskImageType } from './disk-images';

const at = (size: number, offset: number, magic: string) => {
  const bytes = Buffer.alloc(size);
  bytes.write(magic, offset, 'latin1');
  return bytes;
};

describe('diskImageType', () => {
  it('knows ISO 9660 and UDF volumes by their descriptors at sector 16', () => {
    expect(diskImageType(at(0x9000, 0x8001, 'CD001'))).toBe('iso');
    expect(diskImageType(at(0x9800, 0x9001, 'CD001'))).toBe('iso');
    expect(diskImageType(at(0x9000, 0x8001, 'BEA01'))).toBe('iso');
  });

  it('knows virtual machine disks by their headers, and fixed VHDs and DMGs by their trailers', () => {
    expect(diskImageType(at(1024, 0, 'vhdxfile'))).toBe('vhdx');
    expect(diskImageType(at(1024, 0, 'conectix'))).toBe('vhd');
    expect(diskImageType(at(4096, 4096 - 512, 'conectix'))).toBe('vhd');
    expect(diskImageType(at(1024, 0, 'KDMV'))).toBe('vmdk');
    expect(diskImageType(at(1024, 0, 'QFI\xfb'))).toBe('qcow2');
    expect(diskImageType(at(4096, 4096 - 512, 'koly'))).toBe('dmg');
  });

  it('knows a raw FAT or NTFS volume by its boot sector', () => {
    const fat = at(2048, 54, 'FAT16');
    fat[510] = 0x55;
    fat[511] = 0xaa;
    expect(diskImageType(fat)).toBe('img');
    const unsigned = at(2048, 54, 'FAT16');
    expect(diskImageType(unsigned)).toBeNull();
  });

  it('takes everything else, short files included', () => {
    expect(diskImageType(Buffer.from('%PDF-1.7\n'))).toBeNull();
    expect(diskImageType(Buffer.alloc(0))).toBeNull();
    expect(diskImageType(at(0x8003, 0x8001, 'CD'))).toBeNull();
  });
});
