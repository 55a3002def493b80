import { Injectable } from '@nestjs/common';
import { hostMatchesDomain } from '../../common/domain-match';
import { InvalidatedCache } from '../../common/invalidated-cache';
import { DomainChanges } from '../../domains/domain-changes';
import { DomainsService } from '../../domains/domains.service';
import type { Form } from '../form.entity';

/** Verified domains are looked up once per this period per account, not once per post; a change drops them at once. */
const VERIFIED_CACHE_MS = 10_000;

/** The origin of a browser post: from Origin, else from Referer. */
export interface RequestOrigin {
  /** `scheme://host[:port]`. */
  origin: string;
  host: string;
}

export function requestOrigin(originHeader: string | undefined, referer: string | undefined): RequestOrigin | null {
  for (const value of [originHeader, referer]) {
    if (!value || value === 'null') continue;
    try {
      const url = new URL(value);
      if (url.protocol === 'http:' || url.protocol === 'https:') return { origin: url.origin, host: url.hostname.toLowerCase() };
    } catch {
      continue;
    }
  }
  return null;
}

/** True when an allowedOrigins entry (an origin, a host, or `*.host`) admits the origin. */
export function originListed(origin: RequestOrigin, allowed: readonly string[]): boolean {
  return allowed.some((entry) => {
    if (entry.includes('://')) return entry === origin.origin;
    if (entry.startsWith('*.')) return origin.host.endsWith(entry.slice(1));
    return origin.host === entry;
  });
}

/**
 * D-26: a post without a credential is accepted from a verified domain of the form's account (or its
 * subdomain) or from one of the form's allowedOrigins. CORS preflights answer the same question.
 */
@Injectable()
export class OriginPolicy {
  private readonly verified = new InvalidatedCache<string, string[]>(VERIFIED_CACHE_MS);

  constructor(
    private readonly domains: DomainsService,
    changes: DomainChanges,
  ) {
    // A domain verified or deleted on any instance: its account's posts are judged by the new list from now on.
    changes.invalidates(this.verified);
  }

  async allows(form: Form, origin: RequestOrigin | null): Promise<boolean> {
    if (!origin) return false;
    if (originListed(origin, form.settings.allowedOrigins ?? [])) return true;
    const verified = await this.verified.load(form.accountId, () => this.domains.verifiedNames(form.accountId));
    return hostMatchesDomain(origin.host, verified);
  }
}
