import { Injectable } from '@nestjs/common';
import { LINK_MAC_BYTES, linkMac } from '../../common/crypto/link-mac';
import { madeWithAnyKey } from '../../common/crypto/any-key';
import { AppConfigService } from '../../config/app-config.service';

/** How long a notification's download link works, from when the notification was made. */
export const FILE_LINK_DAYS = 30;
const FILE_LINK_MS = FILE_LINK_DAYS * 24 * 60 * 60 * 1000;
const SUBMISSION_ID = /^sub_[A-Za-z0-9]{1,40}$/;

/** The stored upload a link names. */
export interface FileLinkTarget {
  submissionId: string;
  /** The file's position in the submission's files. */
  index: number;
}

/**
 * The download links of stored uploads in a notification: `/forms/files/<base64url of f:submission:index:expiry>.<MAC>`,
 * MACed with a key derived from ENCRYPTION_KEY (a link made under an ENCRYPTION_KEY_PREVIOUS key still works). Nothing
 * is stored per link; the link works for FILE_LINK_DAYS after it is made (a notification sent later, after a release,
 * gets its whole time), whoever holds it (it is mailed to the owner's addresses only). Its expiry is in the token: a
 * link keeps the time it was made with. The API route (a key with forms.read) serves the same file without a time limit.
 */
@Injectable()
export class FormFileLinks {
  /** Current first: it makes every link; the others only verify. */
  private readonly keys: Buffer[];
  private readonly publicUrl: string;

  constructor(config: AppConfigService) {
    this.keys = config.derivedKeys('mailroom form files v1');
    this.publicUrl = config.publicUrl;
  }

  /** A link working for FILE_LINK_DAYS from `madeAt`, the time of the email that carries it. */
  url(target: FileLinkTarget, madeAt: Date = new Date()): string {
    return `${this.publicUrl}/forms/files/${this.token(target, new Date(madeAt.getTime() + FILE_LINK_MS))}`;
  }

  token({ submissionId, index }: FileLinkTarget, expires: Date): string {
    const body = Buffer.from(`f:${submissionId}:${index}:${Math.floor(expires.getTime() / 1000)}`).toString('base64url');
    return `${body}.${linkMac(this.keys[0], body).toString('base64url')}`;
  }

  /** The file a token names; `expired` for a genuine link past its time; null when malformed or tampered with. */
  verify(token: string, now = new Date()): FileLinkTarget | 'expired' | null {
    const [body, mac, extra] = token.split('.');
    if (!body || !mac || extra !== undefined || body.length > 200) return null;
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== LINK_MAC_BYTES || !madeWithAnyKey(given, this.keys, (key) => linkMac(key, body))) return null;
    const [kind, submissionId, index, expires, rest] = Buffer.from(body, 'base64url').toString('utf8').split(':');
    if (kind !== 'f' || !SUBMISSION_ID.test(submissionId ?? '') || rest !== undefined) return null;
    if (!/^\d{1,3}$/.test(index ?? '') || !/^\d{1,12}$/.test(expires ?? '')) return null;
    if (Number(expires) * 1000 < now.getTime()) return 'expired';
    return { submissionId, index: Number(index) };
  }
}
