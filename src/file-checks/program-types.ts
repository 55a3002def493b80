/**
 * file-type's extensions for programs, installers, browser extensions and script containers: refused by their bytes
 * in form uploads and in forwarded mail, whatever the file is called.
 */
export const PROGRAM_TYPES: ReadonlySet<string> = new Set([
  'exe', // MZ: PE and DOS programs, DLLs
  'elf',
  'macho',
  'class',
  'jar',
  'apk',
  'deb',
  'rpm',
  'dmg',
  'crx',
  'xpi',
  'swf',
  'wasm',
  'lnk',
  'chm', // compiled HTML help runs scripts
  'reg',
]);
