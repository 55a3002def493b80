import { Injectable } from '@nestjs/common';
import { LINK_MAC_BYTES, linkMac } from '../common/crypto/link-mac';
import { madeWithAnyKey } from '../common/crypto/any-key';
import { AppConfigService } from '../config/app-config.service';

/** What a tracking link stands for: an open (`o`), a click on a message's link number `link` (`c`), an unsubscribe (`u`). */
export type TrackingTarget =
  { kind: 'o'; messageId: string } | { kind: 'c'; messageId: string; link: number } | { kind: 'u'; messageId: string };

const MESSAGE_ID = /^msg_[A-Za-z0-9]{1,40}$/;

/**
 * The tokens of tracking and unsubscribe links (D-22): `<base64url of kind:messageId[:link]>.<base64url MAC>`,
 * MACed with a key derived from ENCRYPTION_KEY. Nothing is stored per link: a token names the message and
 * the link's position in it; a tampered or made-up token verifies to null. A token made under an
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
    const body = Buffer.from(target.kind === 'c' ? `c:${target.messageId}:${target.link}` : `${target.kind}:${target.messageId}`).toString(
      'base64url',
    );
    return `${body}.${linkMac(this.keys[0], body).toString('base64url')}`;
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
    return link === undefined ? ({ kind, messageId } as Extract<TrackingTarget, { kind: K }>) : null;
  }

  openUrl(messageId: string): string {
    return `${this.publicUrl}/t/o/${this.token({ kind: 'o', messageId })}`;
  }

  clickUrl(messageId: string, link: number): string {
    return `${this.publicUrl}/t/c/${this.token({ kind: 'c', messageId, link })}`;
  }

  unsubscribeUrl(messageId: string): string {
    return `${this.publicUrl}/u/${this.token({ kind: 'u', messageId })}`;
  }
}
