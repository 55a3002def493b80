import { createHmac } from 'node:crypto';
import { toBase32 } from '../common/base32';
import { madeWithAnyKey } from '../common/crypto/any-key';

/** Why an SRS address was refused: not SRS or cut short (`malformed`), a hash we did not make (`forged`), too old (`expired`). */
export class SrsError extends Error {
  constructor(
    readonly reason: 'malformed' | 'forged' | 'expired',
    message: string,
  ) {
    super(message);
    this.name = 'SrsError';
  }
}

const DAY_MS = 86_400_000;
const STAMP_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** Two base32 characters: the day number wraps every 1024 days. */
const STAMP_SLOTS = 1024;
/** Base32 characters of the hash: 40 bits, compared case-insensitively without losing any of them. */
const HASH_LENGTH = 8;
/** Hashes of earlier versions: 4 base64 characters (libsrs2's), about 21 bits once case is ignored. */
const LEGACY_HASH_LENGTH = 4;
/**
 * The last day (UTC) whose SRS0 addresses may carry a legacy hash: this version writes none, so a legacy hash with a
 * later timestamp is forged, and from 21 days after it (the addresses' lifetime) none verifies at all.
 */
const LEGACY_LAST_DAY = Date.UTC(2026, 11, 31) / DAY_MS;
const SRS_LOCAL_PART = /^srs[01][=+-]/i;
const SRS1_LOCAL_PART = /^srs1[=+-]/i;

/**
 * The Sender Rewriting Scheme in the layout libsrs2 and postsrsd write, so that bounces to our SRS addresses can pass
 * through other SRS forwarders and theirs through us: `SRS0=HHHHHHHH=TT=domain=local@forwarder` for a plain sender,
 * `SRS1=HHHHHHHH=first-forwarder==HHHH=TT=domain=local@forwarder` for a sender another forwarder rewrote already
 * (its SRS0 part as it wrote it). HHHHHHHH is HMAC-SHA1 over the lower-cased parts (MTAs may lower-case local parts),
 * its first 40 bits in base32, compared case-insensitively: only we verify our hashes, so they need not be libsrs2's
 * 4 base64 characters, which lose to case folding all but ~21 bits. TT is the day number modulo 1024 in base32.
 * Addresses written with the 4-character hash by earlier versions verify until they expire (LEGACY_LAST_DAY).
 * Given several secrets (as postsrsd is), the first one hashes every address and any of them verifies one: after a key
 * rotation, bounces to addresses made under the previous key still go back.
 */
export class SenderRewriting {
  private readonly secrets: Buffer[];
  private readonly maxAgeDays: number;
  private readonly now: () => number;

  constructor(secret: Buffer | string | readonly (Buffer | string)[], options: { maxAgeDays?: number; now?: () => number } = {}) {
    this.secrets = (Array.isArray(secret) ? secret : [secret]).map((s: Buffer | string) => Buffer.from(s));
    this.maxAgeDays = options.maxAgeDays ?? 21;
    this.now = options.now ?? Date.now;
    if (this.secrets.length === 0 || this.secrets.some((s) => s.length === 0)) throw new Error('The SRS secret is empty');
    if (!Number.isInteger(this.maxAgeDays) || this.maxAgeDays < 0 || this.maxAgeDays >= STAMP_SLOTS) {
      throw new Error(`maxAgeDays must be an integer from 0 to ${STAMP_SLOTS - 1}`);
    }
  }

  /**
   * The envelope sender to use when `domain` forwards mail from `sender`: SRS0 for a plain address, SRS1 for an
   * SRS0/SRS1 address of another forwarder, unchanged when `sender` is '' (a bounce) or already on `domain`.
   * Throws SrsError('malformed') for a sender without a local part and a domain, or a cut-short SRS1 sender.
   */
  forward(sender: string, domain: string): string {
    if (sender === '') return sender;
    const { local, host } = splitAddress(sender);
    if (!local || !host || host.includes('=')) throw new SrsError('malformed', `Cannot rewrite the sender "${sender}"`);
    if (host.toLowerCase() === domain.toLowerCase()) return sender;

    if (SRS1_LOCAL_PART.test(local)) {
      // Bounces go straight back to the first forwarder (the one that wrote SRS0): keep its part, hash it with our secret.
      const [, firstForwarder, srs0Rest] = splitFields(local.slice(5), 3);
      if (!firstForwarder || !srs0Rest) throw new SrsError('malformed', `Cannot rewrite the SRS1 sender "${sender}"`);
      return `SRS1=${this.hash(firstForwarder, srs0Rest)}=${firstForwarder}=${srs0Rest}@${domain}`;
    }
    if (SenderRewriting.isSrs(local)) {
      // The SRS0 part keeps its separator: SRS1=HHHH=host==HHHH=TT=… reverses to SRS0=HHHH=TT=…@host.
      const srs0Rest = local.slice(4);
      return `SRS1=${this.hash(host, srs0Rest)}=${host}=${srs0Rest}@${domain}`;
    }
    const stamp = this.stamp();
    return `SRS0=${this.hash(stamp, host, local)}=${stamp}=${host}=${local}@${domain}`;
  }

  /** True when the local part is an SRS0/SRS1 one (case-insensitive, `SRS0=`, `SRS0-`, `SRS0+`). */
  static isSrs(localPart: string): boolean {
    return SRS_LOCAL_PART.test(localPart);
  }

  /**
   * The address a bounce to this SRS address goes back to (SRS0 → the original sender; SRS1 → the SRS0 address at
   * the previous forwarder). Throws SrsError when malformed, when the hash does not verify (forged) or when the
   * SRS0 timestamp is older than maxAgeDays (expired). The domain after the `@` is not checked: that is RCPT's job.
   */
  reverse(address: string): string {
    const { local } = splitAddress(address);
    if (!SenderRewriting.isSrs(local)) throw new SrsError('malformed', `"${address}" is not an SRS address`);

    if (SRS1_LOCAL_PART.test(local)) {
      const [hash, firstForwarder, srs0Rest] = splitFields(local.slice(5), 3);
      if (!hash || !firstForwarder || !srs0Rest) throw new SrsError('malformed', `The SRS1 address "${address}" is cut short`);
      // Ours carries no timestamp: a legacy hash is judged by the first forwarder's, written the day we forwarded.
      const [, firstStamp] = splitFields(srs0Rest.slice(1), 3);
      this.verifyHash(hash, address, decodeStamp(firstStamp ?? ''), firstForwarder, srs0Rest);
      return `SRS0${srs0Rest}@${firstForwarder}`;
    }

    const [hash, stamp, host, user] = splitFields(local.slice(5), 4);
    if (!hash || !stamp || !host || !user) throw new SrsError('malformed', `The SRS0 address "${address}" is cut short`);
    const stampDay = decodeStamp(stamp);
    if (stampDay === null) throw new SrsError('malformed', `The SRS0 address "${address}" has no valid timestamp`);
    this.verifyHash(hash, address, stampDay, stamp, host, user);
    const ageDays = this.ageDays(stampDay);
    if (ageDays > this.maxAgeDays) throw new SrsError('expired', `The SRS0 address "${address}" is ${ageDays} days old`);
    return `${user}@${host}`;
  }

  /** Days since UTC midnight of 1970-01-01. */
  private day(): number {
    return Math.floor(this.now() / DAY_MS);
  }

  private today(): number {
    return this.day() % STAMP_SLOTS;
  }

  /** Days since a stamp's day; one from the future is 1023 days old, as in libsrs2. */
  private ageDays(stampDay: number): number {
    return (this.today() - stampDay + STAMP_SLOTS) % STAMP_SLOTS;
  }

  private stamp(): string {
    const day = this.today();
    return STAMP_CHARS[day >> 5] + STAMP_CHARS[day & 31];
  }

  /**
   * Throws SrsError('forged') unless `given` is the hash of the parts under one of the secrets: HASH_LENGTH base32
   * characters, or a legacy hash of an address stamped (`stampDay`) before LEGACY_LAST_DAY and not expired.
   */
  private verifyHash(given: string, address: string, stampDay: number | null, ...parts: string[]): void {
    const legacy = given.length === LEGACY_HASH_LENGTH;
    if (legacy ? !this.legacyStillValid(stampDay) : given.length !== HASH_LENGTH) {
      throw new SrsError('forged', `The hash of "${address}" is not one this version accepts`);
    }
    const hashOf = legacy ? legacyHashOf : hashOfParts;
    const actual = Buffer.from(given.toLowerCase());
    if (!madeWithAnyKey(actual, this.secrets, (secret) => Buffer.from(hashOf(secret, parts).toLowerCase())))
      throw new SrsError('forged', `The hash of "${address}" does not verify`);
  }

  private legacyStillValid(stampDay: number | null): boolean {
    if (stampDay === null) return false;
    const ageDays = this.ageDays(stampDay);
    return ageDays <= this.maxAgeDays && this.day() - ageDays <= LEGACY_LAST_DAY;
  }

  private hash(...parts: string[]): string {
    return hashOfParts(this.secrets[0], parts);
  }
}

function hmacOf(secret: Buffer, parts: string[]): Buffer {
  const hmac = createHmac('sha1', secret);
  // libsrs2 lower-cases ASCII only (C's tolower), so must we, or non-ASCII local parts would hash differently.
  for (const part of parts) hmac.update(part.replace(/[A-Z]/g, (c) => c.toLowerCase()));
  return hmac.digest();
}

/** The first 40 bits of the HMAC in base32: HASH_LENGTH characters. */
function hashOfParts(secret: Buffer, parts: string[]): string {
  return toBase32(hmacOf(secret, parts).subarray(0, (HASH_LENGTH * 5) / 8)).toUpperCase();
}

/** libsrs2's hash, which earlier versions wrote: 4 base64 characters. */
function legacyHashOf(secret: Buffer, parts: string[]): string {
  return hmacOf(secret, parts).toString('base64').slice(0, LEGACY_HASH_LENGTH);
}

/** Local part and domain, split at the last `@` (a quoted local part may hold one); no `@`: all local part. */
function splitAddress(address: string): { local: string; host: string } {
  const at = address.lastIndexOf('@');
  return at < 0 ? { local: address, host: '' } : { local: address.slice(0, at), host: address.slice(at + 1) };
}

/** `text` cut at its first `count - 1` '=' signs; the last field keeps the rest, '=' included. */
function splitFields(text: string, count: number): string[] {
  const fields: string[] = [];
  let rest = text;
  while (fields.length < count - 1) {
    const cut = rest.indexOf('=');
    if (cut < 0) return fields;
    fields.push(rest.slice(0, cut));
    rest = rest.slice(cut + 1);
  }
  return [...fields, rest];
}

function decodeStamp(stamp: string): number | null {
  if (!/^[a-z2-7]{2}$/i.test(stamp)) return null;
  const upper = stamp.toUpperCase();
  return (STAMP_CHARS.indexOf(upper[0]) << 5) | STAMP_CHARS.indexOf(upper[1]);
}
