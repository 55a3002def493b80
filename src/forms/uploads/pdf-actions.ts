import { inflateSync } from 'node:zlib';

/** A PDF name ends at whitespace or a delimiter. */
const END = String.raw`(?=[\s()<>\[\]{}/%]|$)`;
const AUTOMATIC_ACTION = new RegExp(String.raw`/(?:OpenAction|AA)${END}`);
const JAVASCRIPT = new RegExp(String.raw`/(?:JS|JavaScript)${END}`);
/** What all object streams of one PDF may inflate to, together. */
const MAX_INFLATED_BYTES = 20 * 1024 * 1024;

/**
 * Whether a PDF runs JavaScript when it is opened or when a page is shown: an automatic action (/OpenAction, /AA)
 * and JavaScript (/JS, /JavaScript) in the same file, as mail providers refuse them. Names written with `#xx`
 * escapes (`/J#61vaScript`) and objects packed in compressed object streams (PDF 1.5) are read too.
 */
export function pdfRunsJavaScript(bytes: Buffer): boolean {
  const text = [bytes.toString('latin1'), ...objectStreams(bytes)]
    .join('\n')
    .replace(/#([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return AUTOMATIC_ACTION.test(text) && JAVASCRIPT.test(text);
}

/** The inflated text of the FlateDecode object streams (`/Type /ObjStm`), where PDF 1.5 packs its dictionaries. */
function objectStreams(bytes: Buffer): string[] {
  const source = bytes.toString('latin1');
  const texts: string[] = [];
  let budget = MAX_INFLATED_BYTES;
  const starts = /stream\r?\n/g;
  for (let match = starts.exec(source); match && budget > 0; match = starts.exec(source)) {
    const dictionary = source.slice(Math.max(0, match.index - 1000), match.index);
    const opened = dictionary.lastIndexOf('obj');
    const own = opened < 0 ? dictionary : dictionary.slice(opened);
    if (!/\/ObjStm/.test(own) || !/\/FlateDecode/.test(own)) continue;
    const start = match.index + match[0].length;
    const end = source.indexOf('endstream', start);
    if (end < 0) break;
    try {
      const inflated = inflateSync(bytes.subarray(start, end), { maxOutputLength: budget, finishFlush: 2 /* Z_SYNC_FLUSH */ });
      budget -= inflated.length;
      texts.push(inflated.toString('latin1'));
    } catch {
      // A damaged or oversized stream: what could be read of the file is judged.
    }
    starts.lastIndex = end;
  }
  return texts;
}
