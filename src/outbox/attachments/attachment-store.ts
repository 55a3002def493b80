import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { type AttachmentUpload, chunksOf, type StoredAttachment } from './attachment-content';

/**
 * How long a blob no message refers to is kept after the last acceptance that took it: an acceptance stores the
 * bytes first and commits its references a moment later, and the sweep must not take them in between.
 */
const UNREFERENCED_GRACE = `interval '1 hour'`;
/** What a stored attachment's stream hands on at once. */
const STREAM_SLICE_BYTES = 64 * 1024;
/** Bytes of blobs one sweep batch deletes at most (the first always goes): each is up to 25 MB of chunks. */
const SWEEP_BYTES_PER_BATCH = 256 * 1024 * 1024;

/** The blobs no message and no form submission (its uploads) refers to, past the grace, oldest first: $1 how many at most, $2 how many bytes at most. */
const DELETE_UNREFERENCED = `
  WITH candidates AS (
    SELECT b.hash, b.size, b.referenced_at FROM attachment_blobs b
     WHERE b.referenced_at < now() - ${UNREFERENCED_GRACE}
       AND NOT EXISTS (SELECT 1 FROM message_attachments r WHERE r.hash = b.hash)
       AND NOT EXISTS (SELECT 1 FROM form_submission_files f WHERE f.hash = b.hash)
     ORDER BY b.referenced_at LIMIT $1 FOR UPDATE SKIP LOCKED
  ), batch AS (
    SELECT hash FROM (SELECT hash, sum(size) OVER (ORDER BY referenced_at, hash) - size AS before FROM candidates) c WHERE before < $2
  )
  DELETE FROM attachment_blobs b USING batch WHERE b.hash = batch.hash AND b.referenced_at < now() - ${UNREFERENCED_GRACE}`;

/** A stored attachment that cannot be read whole (swept, or damaged): the message cannot be sent as accepted. */
export class AttachmentUnavailable extends Error {}

/**
 * Attachment bytes, stored apart from the messages that carry them, once per SHA-256, in PostgreSQL (every
 * process of an installation reads what any of them stored): a blob row, its chunks of about 1 MB, and each
 * message's references. Bytes are written before the message is accepted (`save`), referred to in its acceptance's
 * commit (AcceptanceRepository), read a chunk at a time when it is sent (`open`), released with its content
 * (`release`, by retention) and deleted once nothing refers to them (`deleteUnreferenced`).
 */
@Injectable()
export class AttachmentStore {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Stores the bytes of a message about to be accepted, once per SHA-256. Each chunk is a statement of its own, so
   * that no statement (and no buffer of the driver) holds a whole attachment. Resolves once every chunk is
   * committed: the acceptance then refers to them.
   */
  async save(uploads: readonly AttachmentUpload[]): Promise<void> {
    const distinct = new Map(uploads.map((upload) => [upload.hash, upload]));
    for (const upload of distinct.values()) await this.saveOne(upload);
  }

  private async saveOne(upload: AttachmentUpload): Promise<void> {
    // The row first, or its referenced_at moved to now: from here the sweep leaves the blob alone until the
    // message's references are committed. A sweep that took the row first makes this insert a new one.
    await this.dataSource.query(
      'INSERT INTO attachment_blobs (hash, size) VALUES ($1, $2) ON CONFLICT (hash) DO UPDATE SET referenced_at = now()',
      [upload.hash, upload.size],
    );
    // Every chunk is sent, even when the bytes are stored already (by this account or another): an acceptance then
    // runs the same statements whether or not anyone stored the file before, and its time does not tell that someone
    // did. Chunks there already (stored before, being written by another request, or half by one that died) are kept.
    let seq = 0;
    for (const chunk of chunksOf(upload.content)) {
      await this.dataSource.query('INSERT INTO attachment_chunks (hash, seq, data) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        upload.hash,
        seq++,
        chunk,
      ]);
    }
  }

  /**
   * The attachment's bytes, read a chunk at a time as they are consumed. The stream fails with
   * AttachmentUnavailable when a chunk is missing or the bytes are not those the message refers to.
   */
  open(attachment: StoredAttachment): Readable {
    return Readable.from(this.chunks(attachment), { objectMode: false });
  }

  private async *chunks({ filename, hash, size }: StoredAttachment): AsyncGenerator<Buffer> {
    const digest = createHash('sha256');
    let read = 0;
    for (let seq = 0; read < size; seq++) {
      const rows: { data: Buffer }[] = await this.dataSource.query('SELECT data FROM attachment_chunks WHERE hash = $1 AND seq = $2', [
        hash,
        seq,
      ]);
      if (rows.length === 0) throw new AttachmentUnavailable(`the attachment ${filename} is no longer stored`);
      const data = rows[0].data;
      digest.update(data);
      read += data.length;
      // Handed on in slices: what encodes and sends them (base64, DKIM's body hash, the socket) then buffers a
      // slice at a time rather than a whole chunk, for every delivery in flight.
      for (let at = 0; at < data.length; at += STREAM_SLICE_BYTES) yield data.subarray(at, at + STREAM_SLICE_BYTES);
    }
    if (read !== size || digest.digest('hex') !== hash)
      throw new AttachmentUnavailable(`the stored bytes of the attachment ${filename} are damaged`);
  }

  /**
   * Drops the messages' references to their attachments, in the transaction that clears their content (retention):
   * blobs no other message refers to are deleted by a later `deleteUnreferenced`.
   */
  async release(manager: EntityManager, messageIds: readonly string[]): Promise<void> {
    if (messageIds.length === 0) return;
    await manager.query('DELETE FROM message_attachments WHERE message_id = ANY($1::varchar[])', [[...messageIds]]);
  }

  /**
   * Deletes at most `batchSize` blobs (and at most 256 MB of them, the first always) that no message refers to
   * and that no acceptance took in the last hour, with their chunks, in one short statement (SKIP LOCKED: sweeps
   * running at once take different blobs). Answers how many went; call again while it answers `batchSize`.
   */
  async deleteUnreferenced(batchSize: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(DELETE_UNREFERENCED, [batchSize, SWEEP_BYTES_PER_BATCH]);
    return deleted;
  }
}
