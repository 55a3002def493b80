import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_BYTES = 22;

/** Random bytes are drawn 4 KB at a time (as Node's randomUUID does): one call per id costs a busy server 1–2%. */
const pool = Buffer.alloc(4096);
let offset = pool.length;

/** A prefixed random id (D-3): `acc_4fQ2…`, 22 base62 characters (≈131 bits). */
export function newId(prefix: string): string {
  if (offset + ID_BYTES > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  let out = '';
  for (let i = offset; i < offset + ID_BYTES; i++) out += ALPHABET[pool[i] % 62];
  offset += ID_BYTES;
  return `${prefix}_${out}`;
}
