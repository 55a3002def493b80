import { open, readFile } from 'node:fs/promises';
import { fileTypeFromFile } from 'file-type';
import { PROGRAM_TYPES } from '../../file-checks/program-types';

/** What a file's bytes say it is: file-type's answer (binary formats only), and whether we refuse it. */
export interface Sniffed {
  /** The MIME type file-type found in the bytes; undefined for text and unknown formats. */
  mime?: string;
  /** file-type's extension for the bytes (`zip`, `pdf`, `docm`). */
  ext?: string;
  /** Why the file is refused (`a Windows program (exe)`), or null. */
  refusal: string | null;
}

/**
 * WHATWG MIME Sniffing's "HTML" patterns (https://mimesniff.spec.whatwg.org/#identifying-a-resource-with-an-unknown-mime-type),
 * after leading whitespace. The spec ends a tag name only at a space or `>`; any whitespace or `/` ends it
 * here too, as it does for an HTML parser, and `<!--` counts whatever follows it: refusing a text file that
 * starts like markup costs little, letting an HTML page through costs a phishing page in someone's inbox.
 */
const HTML_START = /^<(?:!doctype\s+html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|svg)(?=[\s>/])|^<!--/i;

/** XML may carry a page or an image with scripts under any prolog: its whole text is searched. */
const XML_START = /^<(?:\?xml|!doctype)/i;
const ACTIVE_XML = /<(?:[\w-]+:)?(?:svg|html|script)[\s>/]|http:\/\/www\.w3\.org\/(?:1999\/xhtml|2000\/svg)/i;

/** Browsers decode a text without a BOM as ASCII-compatible for sniffing; latin1 keeps bytes 1:1. */
function decodeText(bytes: Buffer): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return bytes.subarray(2).toString('utf16le');
  if (bytes[0] === 0xfe && bytes[1] === 0xff) {
    const swapped = Buffer.from(bytes.subarray(2, bytes.length - (bytes.length % 2)));
    return swapped.swap16().toString('utf16le');
  }
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return bytes.subarray(3).toString('latin1');
  return bytes.toString('latin1');
}

/** Why a text document is refused: HTML, SVG, XML with active content, or a `#!` script. */
export function activeTextContent(bytes: Buffer): string | null {
  const text = decodeText(bytes);
  if (text.startsWith('#!')) return 'a script (#!)';
  const start = text.trimStart();
  if (HTML_START.test(start)) return /^<svg/i.test(start) ? 'an SVG image' : 'an HTML document';
  if (XML_START.test(start) && ACTIVE_XML.test(start)) return 'an XML document with HTML, SVG or script';
  return null;
}

/** What is read of an upload to decide whether it is a text document a browser would run; more only when that is not enough. */
const TEXT_HEAD_BYTES = 64 * 1024;

/** Sniffs the bytes of an upload stored at `path`; the file's name and declared type play no part here. */
export async function sniffUploadFile(path: string, size: number): Promise<Sniffed> {
  const type = await fileTypeFromFile(path);
  if (type && PROGRAM_TYPES.has(type.ext)) return { mime: type.mime, ext: type.ext, refusal: `a program or installer (${type.ext})` };
  return { mime: type?.mime, ext: type?.ext, refusal: await activeTextContentOfFile(path, size) };
}

/** activeTextContent of the whole file, reading only its head unless what decides may lie past it. */
async function activeTextContentOfFile(path: string, size: number): Promise<string | null> {
  const head = await readHead(path, TEXT_HEAD_BYTES);
  const verdict = activeTextContent(head);
  if (verdict !== null || size <= head.length) return verdict;
  // Past the head: the first tag after a long run of whitespace, or the active part of an XML document.
  const start = decodeText(head).trimStart();
  if (start.length >= 64 && !XML_START.test(start)) return null;
  return activeTextContent(await readFile(path));
}

async function readHead(path: string, bytes: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}
