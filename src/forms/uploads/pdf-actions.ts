import { constants, createInflate } from 'node:zlib';

/** A PDF name ends at whitespace or a delimiter. */
const END = String.raw`(?=[\s()<>\[\]{}/%]|$)`;
const OPEN_ACTION = new RegExp(String.raw`/OpenAction${END}`);
const AUTOMATIC_ACTION = new RegExp(String.raw`/(?:OpenAction|AA)${END}`);
const JAVASCRIPT = new RegExp(String.raw`/(?:JS|JavaScript)${END}`);
/** What all object streams of one PDF may inflate to, together, damaged and oversized ones included. */
export const MAX_INFLATED_BYTES = 20 * 1024 * 1024;
/** More object streams than a 10 MB PDF holds (a writer packs ~100 objects in each): past it the PDF is not checked. */
export const MAX_OBJECT_STREAMS = 2000;

/**
 * What a PDF runs by itself: 'opening' (an /OpenAction and JavaScript), 'actions' (other automatic actions, /AA, and
 * JavaScript: a fillable form's calculation scripts, or a page's), 'unchecked' (its compressed object streams are more
 * than is read: it may hide either), or null.
 */
export type PdfScripts = 'opening' | 'actions' | 'unchecked' | null;

/**
 * Whether a PDF runs JavaScript when it is opened or when a page or field is used: an automatic action (/OpenAction,
 * /AA) and JavaScript (/JS, /JavaScript) in the same file, as mail providers refuse them. Names written with `#xx`
 * escapes (`/J#61vaScript`) and objects packed in compressed object streams (PDF 1.5) are read too, inflated off the
 * event loop and within MAX_INFLATED_BYTES together.
 */
export async function pdfScripts(bytes: Buffer): Promise<PdfScripts> {
  const streams = await objectStreams(bytes);
  const text = decodeNames([bytes.toString('latin1'), ...streams.texts].join('\n'));
  if (AUTOMATIC_ACTION.test(text) && JAVASCRIPT.test(text)) return OPEN_ACTION.test(text) ? 'opening' : 'actions';
  return streams.complete ? null : 'unchecked';
}

/**
 * The inflated text of the FlateDecode object streams (`/Type /ObjStm`), where PDF 1.5 packs its dictionaries;
 * `complete` is false when some were left unread (the budget or the count ran out).
 */
async function objectStreams(bytes: Buffer): Promise<{ texts: string[]; complete: boolean }> {
  const source = bytes.toString('latin1');
  const texts: string[] = [];
  let budget = MAX_INFLATED_BYTES;
  let streams = 0;
  let previousEnd = 0;
  // `endstream` ends a stream; only a `stream` keyword of its own starts one.
  const starts = /(?<!end)stream\r?\n/g;
  for (let match = starts.exec(source); match; match = starts.exec(source)) {
    const start = match.index + match[0].length;
    // The dictionary lies between the previous stream's end and this one: each byte is looked at once.
    const dictionary = decodeNames(source.slice(previousEnd, match.index));
    const end = streamEnd(source, start, dictionary);
    if (end < 0) break;
    previousEnd = end;
    starts.lastIndex = end;
    if (!/\/ObjStm/.test(dictionary) || !/\/FlateDecode/.test(dictionary)) continue;
    if (++streams > MAX_OBJECT_STREAMS || budget <= 0) return { texts, complete: false };
    const inflated = await inflateWithin(bytes.subarray(start, end), budget);
    budget -= inflated.spent;
    if (inflated.over) return { texts, complete: false };
    texts.push(inflated.text);
  }
  return { texts, complete: true };
}

/** PDF names may write any character as `#xx` (`/J#61vaScript`); readers decode them. */
function decodeNames(text: string): string {
  return text.replace(/#([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * Where the stream data starting at `start` ends: after its direct /Length when `endstream` follows there (the data
 * may hold the word itself), else at the first `endstream`; -1 without one.
 */
function streamEnd(source: string, start: number, dictionary: string): number {
  const length = /\/Length\s+(\d+)(?![\d\s]*R)/.exec(dictionary.slice(dictionary.lastIndexOf('obj') + 1));
  if (length) {
    const end = start + Number(length[1]);
    if (/^\s*endstream/.test(source.slice(end, end + 12))) return end;
  }
  return source.indexOf('endstream', start);
}

/**
 * Inflates a zlib stream, stopping once it gives more than `limit` bytes (`over`). A damaged stream gives what it
 * gave before the damage; `spent` counts every byte produced, damaged streams' included.
 */
function inflateWithin(data: Buffer, limit: number): Promise<{ text: string; spent: number; over: boolean }> {
  return new Promise((resolve) => {
    const inflate = createInflate({ finishFlush: constants.Z_SYNC_FLUSH });
    const chunks: Buffer[] = [];
    let spent = 0;
    let settled = false;
    const settle = (over: boolean) => {
      if (settled) return;
      settled = true;
      resolve({ text: Buffer.concat(chunks).toString('latin1'), spent, over });
    };
    inflate.on('data', (chunk: Buffer) => {
      spent += chunk.length;
      if (spent <= limit) return void chunks.push(chunk);
      settle(true);
      inflate.destroy();
    });
    inflate.on('end', () => settle(false));
    inflate.on('error', () => settle(false));
    inflate.end(data);
  });
}
