/**
 * What a form refuses by default because Gmail or Outlook refuse mail carrying it (Gmail's "file types blocked in
 * Gmail", Outlook's "blocked attachments in Outlook", and what both added since: OneNote, MSIX, internet shortcuts,
 * disk images, macro-enabled Office documents). A form may accept any of these by name in `allowedFileTypes`.
 * Programs and documents a browser runs (NEVER_ALLOWED_EXTENSIONS, and the same found by the bytes) stay refused.
 */
export const PROVIDER_REFUSED_TYPES: Readonly<Record<string, string>> = {
  ...kinds('a disk image', 'iso img vhd vhdx vmdk qcow2'),
  ...kinds('an app package or installer', 'msix msixbundle appx appxbundle appinstaller mst msu application appref-ms xbap gadget'),
  ...kinds('a OneNote notebook', 'one onepkg'),
  ...kinds('a shortcut', 'url website desktop scf xnk webpnp'),
  ...kinds('a web archive', 'mht mhtml'),
  ...kinds('a macro-enabled Office document', 'docm dotm xlsm xltm xlam xll pptm potm ppam ppsm sldm'),
  ...kinds(
    'a script or program',
    'ade adp bas bgi cnt csh diagcab diagcfg diagpack ex ex_ fxp grp hlp hpj htc inf ins isp its jnlp ksh lib mad maf ' +
      'mag mam maq mar mas mat mau mav maw mcf mda mdb mde mdt mdw mdz msc msh msh1 msh2 mshxml msh1xml msh2xml nsh ' +
      'ops osd pcd pl plg prf prg printerexport ps1xml ps2 ps2xml psc1 psc2 psd1 psdm1 py pyc pyo pyw pyz pyzw sct shb ' +
      'shs sys theme tmp vb vbp vsmacros vsw vxd ws wsb wsc wsh',
  ),
  ...kinds('a certificate or mailbox file', 'cer crt der pst'),
  ...kinds('an archive that cannot be inspected', '7z rar tar gz tgz bz2 tbz2 xz txz zst z cab ace arj lzh lha'),
};

/**
 * What a form may accept by name in `allowedFileTypes` though no file name shows it: what the bytes show (a PDF's
 * scripts) or what cannot be checked (an encrypted zip entry).
 */
export const CONTENT_REFUSED_TYPES: Readonly<Record<string, string>> = {
  'pdf-javascript': 'a PDF that runs JavaScript by itself (when opened, or a fillable form’s scripts), or one too large to check',
  'encrypted-archive': 'a zip holding encrypted files',
  'unchecked-archive': 'a zip holding files that cannot be checked (an unusual compression, or more than is read of it)',
};

/** Every name `allowedFileTypes` may hold: the providers' extensions and the kinds of content above. */
export const ALLOWABLE_FILE_TYPES: ReadonlySet<string> = new Set([
  ...Object.keys(PROVIDER_REFUSED_TYPES),
  ...Object.keys(CONTENT_REFUSED_TYPES),
]);

/** Programs and scripts a click runs, whatever the bytes: never accepted, in a zip neither. */
const PROGRAM_EXTENSIONS = 'exe dll bat cmd com scr pif cpl msi msp ps1 vbs vbe js jse mjs wsf hta jar sh app apk lnk reg chm';
/** Pages a browser renders from an attachment: never accepted; inside a zip a browser does not open them from the mail. */
const PAGE_EXTENSIONS = 'html htm xhtml xht shtml svg svgz';

/** Names that run or render when opened, whatever the bytes (a `.html` with innocent text today): never accepted. */
export const NEVER_ALLOWED_EXTENSIONS: ReadonlySet<string> = new Set(`${PROGRAM_EXTENSIONS} ${PAGE_EXTENSIONS}`.split(' '));
const NEVER_ALLOWED_IN_ARCHIVES: ReadonlySet<string> = new Set(PROGRAM_EXTENSIONS.split(' '));

function kinds(kind: string, extensions: string): Record<string, string> {
  return Object.fromEntries(extensions.split(/\s+/).map((extension) => [extension, kind]));
}

/** Why a file is refused, and the name that lifts it (`allowedFileTypes`), if any. */
export interface Refusal {
  reason: string;
  /** The name of ALLOWABLE_FILE_TYPES a form may allow; null for what is never accepted. */
  type: string | null;
}

/** The extension of a file name, lower case, without the dot; '' without one. */
export function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return dot < 0 ? '' : filename.slice(dot + 1).toLowerCase();
}

/**
 * Why a file of this name is refused (`.one files are not accepted: a OneNote notebook`), or null. Inside an archive
 * (`inArchive`) pages are taken: only programs and the providers' list are refused there.
 */
export function refusalByName(filename: string, inArchive = false): Refusal | null {
  const extension = extensionOf(filename);
  const never = inArchive ? NEVER_ALLOWED_IN_ARCHIVES : NEVER_ALLOWED_EXTENSIONS;
  if (never.has(extension)) return { reason: `.${extension} files are not accepted`, type: null };
  // `report.tar.gz` is a tar archive in gzip; `.gz` alone decides.
  const kind = PROVIDER_REFUSED_TYPES[extension];
  return kind ? { reason: `.${extension} files are not accepted: ${kind}`, type: extension } : null;
}

/** Whether the form accepts a refusal (its type is one the form's allowedFileTypes names). */
export function allowedBy(refusal: Refusal, allowed: ReadonlySet<string>): boolean {
  return refusal.type !== null && allowed.has(refusal.type);
}
