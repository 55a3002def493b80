import { Injectable } from '@nestjs/common';
import { LINK_MAC_BYTES, linkMac } from '../common/crypto/link-mac';
import { madeWithAnyKey } from '../common/crypto/any-key';
import { normalizeEmailAddress } from '../common/email-address';
import { AppConfigService } from '../config/app-config.service';

/**
 * What a tracking link stands for: an open (`o`), a click on a message's link number `link` (`c`), an unsubscribe
 * (`u`): of one recipient when `recipient` (its tag, recipientOf) is there, else of the message (links made before
 * issue 35, and a body's `{{unsubscribeUrl}}` rendered once for all its recipients).
 */
export type TrackingTarget =
  { kind: 'o'; messageId: string } | { kind: 'c'; messageId: string; link: number } | { kind: 'u'; messageId: string; recipient?: string };

const MESSAGE_ID = /^msg_[A-Za-z0-9]{1,40}$/;
/** 9 bytes of an HMAC of the address: unique among a message's recipients, and no address to be read off a link. */
const RECIPIENT_TAG = /^[A-Za-z0-9_-]{12}$/;
const RECIPIENT_TAG_BYTES = 9;

/**
 * The tokens of tracking and unsubscribe links (D-22): `<base64url of kind:messageId[:link or recipient tag]>.<base64url
 * MAC>`, MACed with a key derived from ENCRYPTION_KEY. Nothing is stored per link: a token names the message and
 * the link's position in it, or the recipient an unsubscribe link is for; a tampered or made-up token verifies to null. A token made under an
 * ENCRYPTION_KEY_PREVIOUS key still verifies: links in mail sent before a key rotation keep working.
 */
@Injectable()
export class TrackingTokens {
  /** Current first: it makes every token; the others only verify. */
  private readonly keys: Buffer[];
  private readonly publicUrl: string;

  constructor(config: AppConfigService) {
    this.keys = config.derivedKeys('mailroom tracking links v1');
    this.publicUrl = config.publicUrl;
  }

  token(target: TrackingTarget): string {
    const last = target.kind === 'c' ? `:${target.link}` : target.kind === 'u' && target.recipient ? `:${target.recipient}` : '';
    const body = Buffer.from(`${target.kind}:${target.messageId}${last}`).toString('base64url');
    return `${body}.${linkMac(this.keys[0], body).toString('base64url')}`;
  }

  /** The tag of a recipient of a message in its unsubscribe links (made with the current key). */
  recipientTag(messageId: string, address: string): string {
    return this.tagWith(this.keys[0], messageId, address);
  }

  /**
   * The recipient among `recipients` that a tag names, made with the current or a previous key; null when none does.
   */
  recipientOf(messageId: string, tag: string, recipients: readonly string[]): string | null {
    return recipients.find((address) => this.keys.some((key) => this.tagWith(key, messageId, address) === tag)) ?? null;
  }

  /** The target of a token of this kind, or null when it is malformed, of another kind or tampered with. */
  verify<K extends TrackingTarget['kind']>(kind: K, token: string): Extract<TrackingTarget, { kind: K }> | null {
    const [body, mac, extra] = token.split('.');
    if (!body || !mac || extra !== undefined || body.length > 200) return null;
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== LINK_MAC_BYTES || !madeWithAnyKey(given, this.keys, (key) => linkMac(key, body))) return null;
    const [tokenKind, messageId, link, rest] = Buffer.from(body, 'base64url').toString('utf8').split(':');
    if (tokenKind !== kind || !MESSAGE_ID.test(messageId ?? '') || rest !== undefined) return null;
    if (kind === 'c') {
      if (!/^\d{1,6}$/.test(link ?? '')) return null;
      return { kind, messageId, link: Number(link) } as Extract<TrackingTarget, { kind: K }>;
    }
    if (link === undefined) return { kind, messageId } as Extract<TrackingTarget, { kind: K }>;
    if (kind === 'u' && RECIPIENT_TAG.test(link)) return { kind, messageId, recipient: link } as Extract<TrackingTarget, { kind: K }>;
    return null;
  }

  openUrl(messageId: string): string {
    return `${this.publicUrl}/t/o/${this.token({ kind: 'o', messageId })}`;
  }

  clickUrl(messageId: string, link: number): string {
    return `${this.publicUrl}/t/c/${this.token({ kind: 'c', messageId, link })}`;
  }

  /** The message's unsubscribe link: of `recipient` when given, else one for every recipient (whose page asks which address). */
  unsubscribeUrl(messageId: string, recipient?: string): string {
    const target: TrackingTarget = recipient
      ? { kind: 'u', messageId, recipient: this.recipientTag(messageId, recipient) }
      : { kind: 'u', messageId };
    return `${this.publicUrl}/u/${this.token(target)}`;
  }

  private tagWith(key: Buffer, messageId: string, address: string): string {
    return linkMac(key, `recipient:${messageId}:${normalizeEmailAddress(address)}`)
      .subarray(0, RECIPIENT_TAG_BYTES)
      .toString('base64url');
  }
}
