import { createHmac } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { fromBase32, toBase32 } from '../common/base32';
import { madeWithAnyKey } from '../common/crypto/any-key';
import { AppConfigService } from '../config/app-config.service';

const LOCAL_PREFIX = 'bounces+';
const MESSAGE_PREFIX = 'msg_';
/** Ids are 22 base62 characters (common/ids.ts); 22 is also the most the 64-character local part has room for. */
const MESSAGE_ID = /^msg_[A-Za-z0-9]{1,22}$/;
/** 64 bits: a bounce for a made-up message needs 2^64 guesses, and the local part stays within 64 characters. */
const MAC_BYTES = 8;

/**
 * VERP return paths: `bounces+<base32 of the id>-<base32 MAC>@<RETURN_PATH_DOMAIN>`, the envelope sender of every
 * message Mailroom composes, so that a bounce names the message it is about without any state. MACed with a key
 * derived from ENCRYPTION_KEY; a tampered or made-up address is no message's. One made under an ENCRYPTION_KEY_PREVIOUS
 * key is still known: bounces of mail sent before a key rotation still find their message.
 */
@Injectable()
export class ReturnPaths {
  /** Current first: it makes every address; the others only verify. */
  private readonly keys: Buffer[];
  private readonly domain: string;

  constructor(config: AppConfigService) {
    this.keys = config.derivedKeys('mailroom verp v1');
    this.domain = config.returnPathDomain;
  }

  /** `bounces+<token>@<RETURN_PATH_DOMAIN>`: the envelope sender (MAIL FROM) of every message Mailroom composes. */
  address(messageId: string): string {
    if (!MESSAGE_ID.test(messageId)) throw new Error(`"${messageId}" is not a message id`);
    return `${LOCAL_PREFIX}${tokenOf(this.keys[0], messageId)}@${this.domain}`;
  }

  /** The message id a bounce to this address is about, or null (not a VERP address of ours, other domain, tampered). */
  messageOf(address: string): string | null {
    if (address.length > 320) return null;
    const at = address.lastIndexOf('@');
    if (at < 0 || address.slice(at + 1).toLowerCase() !== this.domain) return null;
    const local = address.slice(0, at).toLowerCase();
    if (!local.startsWith(LOCAL_PREFIX)) return null;

    const token = local.slice(LOCAL_PREFIX.length);
    const encodedId = token.split('-')[0];
    const idBytes = fromBase32(encodedId);
    if (!idBytes) return null;
    const messageId = MESSAGE_PREFIX + idBytes.toString('latin1');
    if (!MESSAGE_ID.test(messageId)) return null;
    // Comparing whole tokens also refuses other spellings of the same id (spare bits set in the last base32 character).
    return madeWithAnyKey(Buffer.from(token), this.keys, (key) => Buffer.from(tokenOf(key, messageId))) ? messageId : null;
  }
}

function tokenOf(key: Buffer, messageId: string): string {
  const mac = createHmac('sha256', key).update(messageId).digest().subarray(0, MAC_BYTES);
  return `${toBase32(Buffer.from(messageId.slice(MESSAGE_PREFIX.length), 'latin1'))}-${toBase32(mac)}`;
}
