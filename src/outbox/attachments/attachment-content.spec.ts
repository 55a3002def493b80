import { createHash, randomBytes } from 'node:crypto';
import { CHUNK_BYTES, chunkCount, chunksOf, digestOf, prepareAttachments } from './attachment-content';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('attachment content', () => {
  const bytes = randomBytes(2 * CHUNK_BYTES + 12_345);

  it('cuts bytes and their base64 into the same chunks, decoding base64 a chunk at a time', () => {
    const fromBuffer = [...chunksOf(bytes)];
    const fromBase64 = [...chunksOf(bytes.toString('base64'))];
    expect(fromBuffer.map((c) => c.length)).toEqual([CHUNK_BYTES, CHUNK_BYTES, 12_345]);
    expect(fromBase64.map((c) => c.length)).toEqual([CHUNK_BYTES, CHUNK_BYTES, 12_345]);
    expect(Buffer.concat(fromBase64).equals(bytes)).toBe(true);
    expect(chunkCount(bytes.length)).toBe(3);
  });

  it('decodes padded base64 of every length', () => {
    for (const length of [0, 1, 2, 3, 4, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1]) {
      const some = bytes.subarray(0, length);
      expect(Buffer.concat([...chunksOf(some.toString('base64'))]).equals(some)).toBe(true);
      expect(digestOf(some.toString('base64'))).toEqual({ hash: sha256(some), size: length });
    }
  });

  it('references each attachment by the SHA-256 of its bytes and uploads the same bytes once', () => {
    const other = Buffer.from('other');
    const { references, uploads } = prepareAttachments([
      { filename: 'a.bin', content: bytes.toString('base64'), contentType: 'application/octet-stream' },
      { filename: 'copy.bin', content: bytes },
      { filename: 'b.txt', content: other },
    ]);
    expect(references).toEqual([
      { filename: 'a.bin', contentType: 'application/octet-stream', hash: sha256(bytes), size: bytes.length },
      { filename: 'copy.bin', hash: sha256(bytes), size: bytes.length },
      { filename: 'b.txt', hash: sha256(other), size: 5 },
    ]);
    expect(uploads.map((u) => u.hash)).toEqual([sha256(bytes), sha256(other)]);
  });
});
