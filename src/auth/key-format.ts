import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../common/crypto/sha256';
import type { KeyType } from './permissions';

/** Key shapes (D-4): `<prefix>_sk_admin_<64 hex>`, `<prefix>_sk_usage_<64 hex>`, `<prefix>_pk_<8 hex>_<64 hex>`. */
export function generateKey(prefix: string, keyType: KeyType, domainScope?: string | null): string {
  const secret = randomBytes(32).toString('hex');
  if (keyType === 'public') return `${prefix}_pk_${domainHash(domainScope ?? '')}_${secret}`;
  return `${prefix}_sk_${keyType}_${secret}`;
}

/** The first 8 hex characters of sha256 of the lower-cased scoped domain. */
export function domainHash(domain: string): string {
  return sha256Hex(domain.toLowerCase()).slice(0, 8);
}

export function hashKey(key: string): string {
  return sha256Hex(key);
}

/** `svc_sk_admin_…9f3a`: enough to recognise a key, useless to an attacker. */
export function previewKey(key: string): string {
  const head = key.slice(0, key.length - 64);
  return `${head}…${key.slice(-4)}`;
}

/** The key type a string is shaped as, or null if it is not a well-formed key of this installation. */
export function keyTypeOf(prefix: string, key: string): KeyType | null {
  const match = keyShape(prefix).exec(key);
  if (!match) return null;
  return match[2] ? 'public' : (match[1] as KeyType);
}

const shapes = new Map<string, RegExp>();

/** Compiled once per prefix: every request's credential is checked against it before any lookup. */
function keyShape(prefix: string): RegExp {
  let shape = shapes.get(prefix);
  if (!shape) {
    shape = new RegExp(`^${prefix}_(?:sk_(admin|usage)|(pk)_[0-9a-f]{8})_[0-9a-f]{64}$`);
    shapes.set(prefix, shape);
  }
  return shape;
}
