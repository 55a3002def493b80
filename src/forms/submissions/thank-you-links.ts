import { Injectable } from '@nestjs/common';
import { linkMac } from '../../common/crypto/link-mac';
import { madeWithAnyKey } from '../../common/crypto/any-key';
import { AppConfigService } from '../../config/app-config.service';
import type { FormLanguage } from '../i18n/language';
import { httpUrl } from './navigation';

/**
 * The address of our thank-you page for one post: `?lang=de&back=<page that posted>&sig=<MAC>`. The back link is
 * MACed (a key derived from ENCRYPTION_KEY), so the page shows only links Mailroom itself made, for an accepted post
 * from an origin the form allows. That is no vouching for the host: any account can list any host in its forms'
 * allowedOrigins; what it prevents is a link made up in the query string alone.
 */
@Injectable()
export class ThankYouLinks {
  private readonly page: string;
  private readonly keys: Buffer[];

  constructor(config: AppConfigService) {
    this.page = `${config.publicUrl}/forms/thank-you`;
    this.keys = config.derivedKeys('mailroom thank-you back links v1');
  }

  url(language: FormLanguage, back: string | null): string {
    const url = new URL(this.page);
    url.searchParams.set('lang', language);
    if (back) {
      url.searchParams.set('back', back);
      url.searchParams.set('sig', macOf(this.keys[0], back).toString('base64url'));
    }
    return url.href;
  }

  /** The back link of a thank-you page's query, when we made it; else null. */
  verifiedBack(back: string | undefined, sig: string | undefined): string | null {
    if (!back || !sig || back.length > 2000 || !httpUrl(back)) return null;
    const given = Buffer.from(sig, 'base64url');
    return madeWithAnyKey(given, this.keys, (key) => macOf(key, back)) ? back : null;
  }
}

function macOf(key: Buffer, back: string): Buffer {
  return linkMac(key, `thank-you back:${back}`);
}
