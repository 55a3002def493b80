import { exchange, ScannerFailure } from './scanner-socket';

/** Bytes per INSTREAM chunk: clamd's own clients (clamdscan) send about this much at a time. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Has clamd scan `message` with its INSTREAM command (https://docs.clamav.net/manual/Usage/Scanning.html#clamd):
 * `zINSTREAM\0`, then chunks each preceded by its length (4 bytes, network order), then a zero length.
 * Resolves with the name of the virus found, or null when there is none.
 */
export async function scanForVirus(address: string, message: Buffer, timeoutMs: number): Promise<string | null> {
  return parseClamdReply(await exchange('clamd', address, instream(message), timeoutMs));
}

function* instream(message: Buffer): Generator<Buffer> {
  yield Buffer.from('zINSTREAM\0', 'latin1');
  for (let offset = 0; offset < message.length; offset += CHUNK_BYTES) {
    const chunk = message.subarray(offset, offset + CHUNK_BYTES);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(chunk.length);
    yield length;
    yield chunk;
  }
  yield Buffer.alloc(4);
}

/**
 * `stream: OK`, `stream: <virus> FOUND`, or `<reason> ERROR` (a ScannerFailure: `INSTREAM size limit exceeded`
 * means clamd's StreamMaxLength is below INBOUND_SMTP_MAX_MESSAGE_BYTES).
 */
export function parseClamdReply(reply: Buffer): string | null {
  const text = reply.toString('latin1').replace(/\0+$/, '').trim();
  if (/^stream: OK$/.test(text)) return null;
  const found = /^stream: (.+) FOUND$/.exec(text);
  if (found) return found[1];
  throw new ScannerFailure(`clamd: ${JSON.stringify(text.slice(0, 200))}`);
}
