import { randomBytes } from 'node:crypto';
import { FileHandle, mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { ByteBudget } from '../common/byte-budget';

/** Messages up to this size stay in memory while they arrive; a bigger one goes to a file from its first byte past it. */
export const SPOOL_THRESHOLD_BYTES = 256 * 1024;
/**
 * Bytes of spooled messages read back into memory at once by one spool, so by one InboundSmtpServer (one per
 * thread that runs it; each is then stored, which copies it once more): past it, a message waits for the others
 * before its end of DATA is answered. One message bigger than this is read alone.
 */
export const LOADED_BYTES_BUDGET = 64 * 1024 * 1024;
/** A spool file this much older than its last write was left by a process that stopped mid-transaction. */
const STALE_AFTER_MS = 24 * 3_600_000;
const FILE_PREFIX = 'mailroom-inbound-';

/** What of a transaction's DATA has arrived so far. */
interface Received {
  /** In memory until the message passes the threshold. */
  chunks: Buffer[];
  /** The spool file, once it did. */
  path: string | null;
  size: number;
  /** More than the limit came: nothing is kept. */
  tooBig: boolean;
}

/**
 * Where the inbound server keeps messages while they arrive (D-31): small ones in memory, larger ones in a file
 * in `dir`, so that a hundred slow 25 MB transactions hold a hundred file handles, not 2.5 GB of heap. A message
 * is read back whole only to be stored, under the spool's byte budget (LOADED_BYTES_BUDGET).
 */
export class MessageSpool {
  private readonly budget = new ByteBudget(LOADED_BYTES_BUDGET);

  constructor(
    private readonly dir: string,
    private readonly thresholdBytes = SPOOL_THRESHOLD_BYTES,
  ) {}

  /** Creates the directory and removes the files a process that stopped mid-transaction left behind. */
  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const now = Date.now();
    for (const name of await readdir(this.dir)) {
      if (!name.startsWith(FILE_PREFIX)) continue;
      const path = join(this.dir, name);
      const info = await stat(path).catch(() => null);
      if (info && now - info.mtimeMs > STALE_AFTER_MS) await rm(path, { force: true });
    }
  }

  /**
   * Runs `use` with the whole message as it arrives on `stream` (null when more than `maxBytes` came: the stream
   * is read to its end all the same, so that the client gets its answer), then forgets it, the spool file removed.
   * Spooled messages wait for the byte budget before they are read back.
   */
  async receive<T>(stream: Readable, maxBytes: number, use: (source: Buffer | null) => Promise<T>): Promise<T> {
    const received: Received = { chunks: [], path: null, size: 0, tooBig: false };
    try {
      await this.take(stream, maxBytes, received);
      if (received.tooBig) return await use(null);
      if (!received.path) return await use(Buffer.concat(received.chunks));
      const release = await this.budget.acquire(received.size);
      try {
        return await use(await readFile(received.path));
      } finally {
        release();
      }
    } finally {
      if (received.path) await rm(received.path, { force: true });
    }
  }

  /**
   * Reads the stream to its end, keeping up to `maxBytes`, past the threshold in a file. A file that cannot be
   * written (a full disk) fails the transaction once the stream has ended, not before: the client is mid-DATA.
   */
  private async take(stream: Readable, maxBytes: number, received: Received): Promise<void> {
    let file: FileHandle | null = null;
    let failure: Error | null = null;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (received.tooBig || failure) continue;
        if (received.size + chunk.length > maxBytes) {
          received.tooBig = true;
          received.chunks = [];
          continue;
        }
        received.size += chunk.length;
        if (!file && received.size <= this.thresholdBytes) {
          received.chunks.push(chunk);
          continue;
        }
        try {
          if (!file) {
            received.path = join(this.dir, `${FILE_PREFIX}${process.pid}-${randomBytes(8).toString('hex')}.eml`);
            file = await open(received.path, 'wx', 0o600);
            for (const kept of received.chunks.splice(0)) await file.write(kept);
          }
          await file.write(chunk);
        } catch (err) {
          failure = err as Error;
        }
      }
    } finally {
      await file?.close();
    }
    if (failure) throw failure;
  }
}
