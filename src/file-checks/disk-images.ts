/**
 * Disk images that file-type does not tell apart (it knows DMG only by a zlib header): mail delivers malware in
 * them because the files inside escape the "downloaded from the internet" mark. Each is known by its own bytes.
 */
const AT_START: [ext: string, magic: string][] = [
  ['vhdx', 'vhdxfile'],
  ['vhd', 'conectix'], // a dynamic VHD starts with a copy of its footer
  ['vmdk', 'KDMV'],
  ['vmdk', '# Disk DescriptorFile'],
  ['qcow2', 'QFI\xfb'],
];

/** ISO 9660 and UDF volume descriptors start at sector 16 (2048-byte sectors); more may follow. */
const VOLUME_DESCRIPTOR_OFFSETS = [0x8001, 0x8801, 0x9001];
const VOLUME_DESCRIPTORS = ['CD001', 'BEA01', 'NSR02', 'NSR03'];

/** The file-type-like extension of the disk image `bytes` hold (`iso`, `vhd`, `dmg`, `img`…), or null. */
export function diskImageType(bytes: Buffer): string | null {
  const at = (offset: number, magic: string) =>
    offset >= 0 && bytes.length >= offset + magic.length && bytes.toString('latin1', offset, offset + magic.length) === magic;
  for (const [ext, magic] of AT_START) if (at(0, magic)) return ext;
  if (VOLUME_DESCRIPTOR_OFFSETS.some((offset) => VOLUME_DESCRIPTORS.some((magic) => at(offset, magic)))) return 'iso';
  // A fixed VHD has its footer only in the last 512 bytes; so has a DMG (UDIF) its "koly" trailer.
  if (at(bytes.length - 512, 'conectix')) return 'vhd';
  if (at(bytes.length - 512, 'koly')) return 'dmg';
  // A raw FAT or NTFS volume (.img): a boot sector whose signature ends its first 512 bytes.
  if (bytes.length >= 512 && bytes[510] === 0x55 && bytes[511] === 0xaa) {
    if (at(3, 'NTFS    ') || at(54, 'FAT12') || at(54, 'FAT16') || at(82, 'FAT32')) return 'img';
  }
  return null;
}
