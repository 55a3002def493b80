import { createHash } from 'node:crypto';

/**
 * Bytes per stored chunk (about 1 MB). A multiple of 3, so that chunk i is exactly base64 characters
 * [4·i·CHUNK_BYTES/3, …) of the input: a base64 attachment is decoded a chunk at a time, never whole.
 */
export const CHUNK_BYTES = 960 * 1024;
const CHUNK_BASE64_CHARS = (CHUNK_BYTES / 3) * 4;

/**
 * What a delivery that reads stored attachments holds of them, about, whatever their size: the chunk being read,
 * its text as PostgreSQL sends it (hex: twice its size), the slices on their way out, and what the garbage collector
 * has not reclaimed yet (measured: about 5 MB per delivery in flight). Counted in the delivery's budget.
 */
export const ATTACHMENT_READ_BYTES = 8 * CHUNK_BYTES;

/** An attachment's bytes as given: standard padded base64 without whitespace (the API, checked by its DTO), or bytes. */
export type AttachmentBytes = string | Buffer;

/** An attachment as a sender gives it. */
export interface AttachmentInput {
  filename: string;
  contentType?: string;
  content: AttachmentBytes;
}

/** What a message's content keeps of an attachment stored apart (AttachmentStore): its bytes are found by their SHA-256. */
export interface StoredAttachment {
  filename: string;
  contentType?: string;
  /** SHA-256 of the bytes, lower-case hex. */
  hash: string;
  size: number;
}

/** An attachment of a message accepted before attachments were stored apart: base64 in the message row. */
export interface InlineAttachment {
  filename: string;
  contentType?: string;
  content: string;
}

/** An attachment as a message's content holds it: a reference, or (messages accepted before) the bytes themselves. */
export type MessageAttachment = StoredAttachment | InlineAttachment;

export function isStored(attachment: MessageAttachment): attachment is StoredAttachment {
  return 'hash' in attachment;
}

/** Bytes to store before the message referring to them is accepted. */
export interface AttachmentUpload {
  hash: string;
  size: number;
  content: AttachmentBytes;
}

/** The attachments of a message to accept: the references its content keeps, and the bytes to store for them. */
export interface PreparedAttachments {
  references: StoredAttachment[];
  uploads: AttachmentUpload[];
}

export function prepareAttachments(inputs: readonly AttachmentInput[] = []): PreparedAttachments {
  const references: StoredAttachment[] = [];
  const uploads = new Map<string, AttachmentUpload>();
  for (const input of inputs) {
    const { hash, size } = digestOf(input.content);
    references.push({ filename: input.filename, ...(input.contentType ? { contentType: input.contentType } : {}), hash, size });
    if (!uploads.has(hash)) uploads.set(hash, { hash, size, content: input.content });
  }
  return { references, uploads: [...uploads.values()] };
}

/** The decoded size of the bytes, without decoding them. */
export function byteLengthOf(content: AttachmentBytes): number {
  return typeof content === 'string' ? Buffer.byteLength(content, 'base64') : content.length;
}

/** The bytes in chunks of CHUNK_BYTES (the last shorter): a base64 string decoded one chunk at a time. */
export function* chunksOf(content: AttachmentBytes): Generator<Buffer> {
  if (typeof content !== 'string') {
    for (let at = 0; at < content.length; at += CHUNK_BYTES) yield content.subarray(at, at + CHUNK_BYTES);
    return;
  }
  for (let at = 0; at < content.length; at += CHUNK_BASE64_CHARS) {
    yield Buffer.from(content.slice(at, at + CHUNK_BASE64_CHARS), 'base64');
  }
}

/** How many chunks bytes of this size are stored in. */
export function chunkCount(size: number): number {
  return Math.ceil(size / CHUNK_BYTES);
}

/** SHA-256 (hex) and size of the bytes, decoded a chunk at a time. */
export function digestOf(content: AttachmentBytes): { hash: string; size: number } {
  const hash = createHash('sha256');
  let size = 0;
  for (const chunk of chunksOf(content)) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { hash: hash.digest('hex'), size };
}
