import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AuthContext } from '../../auth/auth-context';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { ExpiringMap } from '../../common/expiring-map';
import { RateLimitService } from '../../rate-limits/rate-limit.service';
import { normalizeDomainName } from '../../domains/domain-name';
import { DomainsService } from '../../domains/domains.service';
import { CONTACT_FORM_SLUG, Form } from '../form.entity';
import { FormsService } from '../forms.service';
import { OriginPolicy, RequestOrigin } from './origin-policy';

/** What a submission URL names. */
export type SubmissionRoute =
  /** `/{domain}/{form}`, `/{domain}/send`, `/v1/{domain}/send` */
  | { kind: 'domain'; domain: string; slug: string }
  /** `/f/{formId}` */
  | { kind: 'form'; id: string }
  /** `/c/{collection}/{form}`, `/f/{collection}/{form}` */
  | { kind: 'collection'; collection: string; slug: string }
  /** `/submit/{form}`: a form id, or with a key a slug of the key's account */
  | { kind: 'reference'; ref: string };

export interface Caller {
  auth?: AuthContext;
  origin: RequestOrigin | null;
  request: Request;
  response: Response;
}

/** A form found is reused for this long: a busy form costs no query per post; a change applies within it. */
const FORM_CACHE_MS = 1000;

/**
 * Finds the form a submission URL names, for the caller: a key reaches its own account's forms only (another
 * account's is a 404, D-1), a public key only its domain's (403). A post without a credential to a name that
 * is not a form counts against the client IP's failed-lookup budget, so guessing ids is slow.
 */
@Injectable()
export class FormTargets {
  constructor(
    private readonly forms: FormsService,
    private readonly domains: DomainsService,
    private readonly origins: OriginPolicy,
    private readonly limiter: RateLimitService,
  ) {}

  private readonly cache = new ExpiringMap<string, Form>(FORM_CACHE_MS);

  async resolve(route: SubmissionRoute, caller: Caller): Promise<Form> {
    const form = await this.cached(route, caller);
    if (!form || (caller.auth && form.accountId !== caller.auth.accountId)) {
      if (!caller.auth) await this.limiter.countAuthFailure(caller.request, caller.response);
      throw AppException.notFound('Form', describe(route));
    }
    const { auth } = caller;
    if (auth?.keyType === 'public' && form.domain && form.domain.name !== auth.domainScope) {
      throw new AppException(ErrorCode.Forbidden, `This public key works only for ${auth.domainScope}`);
    }
    return form;
  }

  /**
   * The form resolve() finds for the caller, else null; counting no failed lookup and throwing nothing, and not holding
   * a public key to its domain: for the answer to an error, whose readability is the form's origins' decision.
   */
  async lookup(route: SubmissionRoute, caller: Caller): Promise<Form | null> {
    const form = await this.cached(route, caller).catch(() => null);
    return form && (!caller.auth || form.accountId === caller.auth.accountId) ? form : null;
  }

  /**
   * Only forms found and confirmed are kept: one created a moment ago must work at once, and an instant form
   * must see its confirmation at once (a held submission after it would wait for nothing).
   */
  private async cached(route: SubmissionRoute, caller: Caller): Promise<Form | null> {
    // What the lookup depends on: the route, the key's account, and (for collections) the origin.
    const key = `${JSON.stringify(route)}|${caller.auth?.accountId ?? ''}|${route.kind === 'collection' ? (caller.origin?.host ?? '') : ''}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const form = await this.find(route, caller);
    if (form?.confirmedAt) this.cache.set(key, form);
    return form;
  }

  private async find(route: SubmissionRoute, caller: Caller): Promise<Form | null> {
    switch (route.kind) {
      case 'domain':
        return this.ofDomain(route.domain, route.slug, caller.auth);
      case 'form':
        return route.id.startsWith('frm_') ? this.forms.findById(route.id) : null;
      case 'collection':
        return this.ofCollection(route.collection, route.slug, caller);
      case 'reference':
        if (route.ref.startsWith('frm_')) return this.forms.findById(route.ref);
        return caller.auth ? this.bySlug(caller.auth, route.ref) : null;
    }
  }

  private async ofDomain(name: string, slug: string, auth?: AuthContext): Promise<Form | null> {
    const normalized = normalizeDomainName(name);
    if (!normalized?.includes('.')) return null;
    const domain = auth ? await this.domains.findVerified(auth.accountId, normalized) : await this.domains.findVerifiedByName(normalized);
    if (!domain) return null;
    if (slug === CONTACT_FORM_SLUG) return this.forms.contactForm(domain.accountId, domain.id);
    return this.forms.findOfDomain(domain.id, slug);
  }

  /** Collection slugs are unique per account only: a post without a key goes to the one whose origin check it passes. */
  private async ofCollection(collection: string, slug: string, caller: Caller): Promise<Form | null> {
    const candidates = await this.forms.findOfCollectionSlug(collection, slug, caller.auth?.accountId);
    if (caller.auth || candidates.length <= 1) return candidates[0] ?? null;
    for (const form of candidates) {
      if (await this.origins.allows(form, caller.origin)) return form;
    }
    return candidates[0];
  }

  /** `/submit/{slug}` with a key: the one form of that slug in the account (a public key: of its domain). */
  private async bySlug(auth: AuthContext, slug: string): Promise<Form | null> {
    const matches = (await this.forms.findBySlug(auth.accountId, slug)).filter(
      (form) => auth.keyType !== 'public' || form.domain?.name === auth.domainScope,
    );
    if (matches.length > 1) {
      throw new AppException(ErrorCode.Conflict, `Several forms of this account have the slug ${slug}: post to /f/{formId} instead`, {
        formIds: matches.map((form) => form.id),
      });
    }
    return matches[0] ?? null;
  }
}

function describe(route: SubmissionRoute): string {
  switch (route.kind) {
    case 'domain':
      return `${route.domain}/${route.slug}`;
    case 'form':
      return route.id;
    case 'collection':
      return `${route.collection}/${route.slug}`;
    case 'reference':
      return route.ref;
  }
}
