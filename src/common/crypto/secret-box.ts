import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../../config/app-config.service';

const VERSION = 'v1';
/** `v1.<iv>.<tag>.<ciphertext>`, base64url parts (the ciphertext of an empty text is empty). */
const SEALED_FORMAT = /^v1\.[\w-]+\.[\w-]+\.[\w-]*$/;

/** A sealed value that is malformed or opens with none of the configured keys. Never names a key's value. */
export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

/**
 * Encrypts secrets at rest (DKIM private keys, webhook secrets, forms' CAPTCHA secrets) with AES-256-GCM. Seals with ENCRYPTION_KEY only;
 * opens with it or with any ENCRYPTION_KEY_PREVIOUS key. The sealed form names no key: the GCM tag tells which one
 * fits, so values sealed before key rotation existed need no migration.
 */
@Injectable()
export class SecretBox {
  constructor(private readonly config: AppConfigService) {}

  /**
   * Whether `value` has the sealed form: what tells a sealed value from the plain text a column held before its
   * values were sealed (no provider's secret looks like `v1.<base64url>.<base64url>.<base64url>`).
   */
  static isSealed(value: string): boolean {
    return SEALED_FORMAT.test(value);
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.config.encryptionKey, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  open(sealed: string): string {
    return this.unseal(sealed).plaintext;
  }

  /**
   * The plaintext, and whether ENCRYPTION_KEY sealed it (false: a previous key did). Tries ENCRYPTION_KEY, then each
   * ENCRYPTION_KEY_PREVIOUS key in order; GCM's tag refuses every key but the one that sealed it.
   */
  unseal(sealed: string): { plaintext: string; current: boolean } {
    if (!SecretBox.isSealed(sealed)) throw new SecretBoxError('Unknown sealed secret format');
    const [, iv, tag, ciphertext] = sealed.split('.');
    const keys = this.config.encryptionKeys;
    for (const [index, key] of keys.entries()) {
      const plaintext = decrypt(key, Buffer.from(iv, 'base64url'), Buffer.from(tag, 'base64url'), Buffer.from(ciphertext, 'base64url'));
      if (plaintext !== null) return { plaintext, current: index === 0 };
    }
    throw new SecretBoxError(
      keys.length > 1
        ? 'The sealed secret opens with neither ENCRYPTION_KEY nor any key in ENCRYPTION_KEY_PREVIOUS'
        : 'The sealed secret does not open with ENCRYPTION_KEY (and ENCRYPTION_KEY_PREVIOUS is not set)',
    );
  }

  /** The value sealed under ENCRYPTION_KEY, or null when it already is. Throws SecretBoxError when no key opens it. */
  reseal(sealed: string): string | null {
    const { plaintext, current } = this.unseal(sealed);
    return current ? null : this.seal(plaintext);
  }
}

/** The plaintext, or null when the tag says `key` did not seal it. */
function decrypt(key: Buffer, iv: Buffer, tag: Buffer, ciphertext: Buffer): string | null {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
