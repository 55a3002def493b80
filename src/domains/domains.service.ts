import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Not, Repository } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { uniqueViolation } from '../common/errors/unique-violation';
import { newId } from '../common/ids';
import { AppConfigService } from '../config/app-config.service';
import { Domain, DomainSettings } from './domain.entity';
import { normalizeDomainName } from './domain-name';
import { SettingsChecker } from '../common/settings-checker';
import { checkForwarding, checkInboundFiltering, DOMAIN_LIMITS } from './domain-settings';
import { DnsRecord, dnsRecordsFor, dkimSelectorFor, generateDkimKey } from './dns-records';
import { DnsVerifier } from './dns-verifier';
import { DomainChanges } from './domain-changes';

/** What a sender needs to sign mail for a verified domain. */
export interface DkimSigningKey {
  domainName: string;
  keySelector: string;
  privateKey: string;
}

/** Changes to a domain's settings: a section given replaces the stored one, null removes it, absent keeps it. */
export interface DomainSettingsChange {
  contactRecipients?: unknown;
  forwarding?: unknown;
  inboundFiltering?: unknown;
}

/** D-30: a domain not verified this long after it was added becomes failed. */
export const VERIFICATION_WINDOW_MS = 72 * 60 * 60 * 1000;

/**
 * Domains of an account: verification, DKIM keys and settings (D-30). The only writer of domains. A domain's forms
 * are written by forms/domains/domain-forms.service.ts, which calls in here for the domain's part.
 */
@Injectable()
export class DomainsService {
  constructor(
    @InjectRepository(Domain) private readonly domains: Repository<Domain>,
    private readonly secrets: SecretBox,
    private readonly config: AppConfigService,
    private readonly dns: DnsVerifier,
    private readonly changes: DomainChanges,
  ) {}

  /** The account's verified domain of that name, or null. */
  findVerified(accountId: string, name: string): Promise<Domain | null> {
    return this.domains.findOneBy({ accountId, name: name.toLowerCase(), status: 'verified' });
  }

  /** Names of the account's verified domains. */
  async verifiedNames(accountId: string): Promise<string[]> {
    const domains = await this.domains.find({ where: { accountId, status: 'verified' }, select: { name: true } });
    return domains.map((domain) => domain.name);
  }

  /**
   * The verified domain of that name, whichever account holds it (at most one can, D-30). Only for entry
   * points that learn the account from the domain itself: anonymous form posts, inbound mail.
   */
  findVerifiedByName(name: string): Promise<Domain | null> {
    return this.domains.findOneBy({ name: name.toLowerCase(), status: 'verified' });
  }

  /** The DKIM key of a domain, decrypted, in the shape nodemailer's `dkim` option takes. */
  signingKey(domain: Domain): DkimSigningKey {
    return { domainName: domain.name, keySelector: domain.dkimSelector, privateKey: this.secrets.open(domain.dkimPrivateKey) };
  }

  async list(accountId: string): Promise<Domain[]> {
    await this.expireOverdue(accountId);
    return this.domains.find({ where: { accountId }, order: { createdAt: 'ASC' } });
  }

  /** One domain of the account by name; 404 for unknown, foreign and malformed names alike (D-1). */
  async get(accountId: string, name: string): Promise<Domain> {
    const normalized = normalizeDomainName(name);
    if (!normalized) throw AppException.notFound('Domain', name);
    await this.expireOverdue(accountId);
    const domain = await this.domains.findOneBy({ accountId, name: normalized });
    if (!domain) throw AppException.notFound('Domain', normalized);
    return domain;
  }

  /** Adds a domain with a fresh verification token and RSA-2048 DKIM key. */
  async create(accountId: string, rawName: string): Promise<Domain> {
    const name = normalizeDomainName(rawName);
    if (!name) throw AppException.invalidField('domain', `not a valid domain name: ${rawName}`);
    if (await this.domains.existsBy({ accountId, name })) {
      throw new AppException(ErrorCode.Conflict, `The domain ${name} is already added to this account`);
    }
    if (await this.domains.existsBy({ accountId: Not(accountId), name, status: 'verified' })) throw this.takenBy(name);

    const domain = await this.build(accountId, name);
    try {
      // save, not insert: TypeORM's insert typing cannot express the jsonb settings shape
      await this.domains.save(domain);
    } catch (err) {
      throw this.conflictOf(err, name);
    }
    if (domain.status === 'verified') await this.changes.changed(accountId, name);
    return this.domains.findOneByOrFail({ id: domain.id, accountId });
  }

  /** Names among these that another account has verified: they cannot be added to this one (D-30). */
  async verifiedElsewhere(accountId: string, names: string[]): Promise<string[]> {
    if (names.length === 0) return [];
    const taken = await this.domains.find({
      where: { accountId: Not(accountId), name: In(names), status: 'verified' },
      select: { name: true },
    });
    return taken.map((domain) => domain.name);
  }

  /**
   * Writes the declarative configuration's domains in the caller's transaction (checked already): each of
   * `upserts` is created if new, its settings made exactly these; `remove` are deleted. Answers the upserted
   * domains by name. The caller tells DomainChanges of the created and removed ones once its transaction commits
   * (AccountConfigService.push): told before, a lookup in between would cache the old list until it expires.
   */
  async applyConfig(
    manager: EntityManager,
    accountId: string,
    upserts: { name: string; settings: DomainSettings }[],
    remove: string[],
  ): Promise<Map<string, Domain>> {
    const repository = manager.getRepository(Domain);
    if (remove.length) await repository.delete({ accountId, name: In(remove) });
    const existing = new Map(
      (await repository.find({ where: { accountId, name: In(upserts.map((u) => u.name)) } })).map((d) => [d.name, d]),
    );
    // New domains' DKIM keys are made side by side (RSA-2048 takes a worker thread ~100 ms each).
    const created = new Map(
      await Promise.all(
        upserts.filter((u) => !existing.has(u.name)).map(async (u) => [u.name, await this.build(accountId, u.name)] as const),
      ),
    );
    const written = new Map<string, Domain>();
    for (const { name, settings } of upserts) {
      let domain = existing.get(name);
      if (domain) await repository.update({ id: domain.id, accountId }, { settings });
      else {
        domain = created.get(name)!;
        domain.settings = settings;
        try {
          await repository.save(domain);
        } catch (err) {
          throw this.conflictOf(err, name);
        }
      }
      written.set(name, domain);
    }
    return written;
  }

  /**
   * Looks the verification TXT record up now. Found: verified (also from failed, D-30). Not found: pending
   * until 72 h after creation, failed after; the reason is kept in lastCheckError. A verified domain stays so.
   */
  async verify(accountId: string, name: string): Promise<Domain> {
    const domain = await this.get(accountId, name);
    if (domain.status === 'verified') return domain;

    const check = await this.dns.hasTxt(domain.name, this.verificationRecord(domain));
    const now = new Date();
    if (check.found) {
      try {
        await this.domains.update(
          { id: domain.id, accountId },
          { status: 'verified', verifiedAt: now, lastCheckedAt: now, lastCheckError: null },
        );
      } catch (err) {
        throw this.conflictOf(err, domain.name);
      }
    } else {
      const status = this.isOverdue(domain, now) ? 'failed' : domain.status;
      await this.domains.update({ id: domain.id, accountId }, { status, lastCheckedAt: now, lastCheckError: check.reason });
      if (status === domain.status) return this.domains.findOneByOrFail({ id: domain.id, accountId });
    }
    // Forms' origin checks, senders and DKIM keys are cached per instance: all of them see the new state at once.
    await this.changes.changed(accountId, domain.name);
    return this.domains.findOneByOrFail({ id: domain.id, accountId });
  }

  /** The domain's settings with `change` applied; each bad value is added to `check`'s errors. */
  changedSettings(domain: Domain, change: DomainSettingsChange, check: SettingsChecker): DomainSettings {
    const settings: DomainSettings = { ...domain.settings };
    if (change.contactRecipients === null) delete settings.contactRecipients;
    else if (change.contactRecipients !== undefined) {
      settings.contactRecipients = check.emails(change.contactRecipients, 'contactRecipients', DOMAIN_LIMITS.contactRecipients);
    }
    if (change.forwarding === null) delete settings.forwarding;
    else if (change.forwarding !== undefined) settings.forwarding = checkForwarding(change.forwarding, 'forwarding', check);
    if (change.inboundFiltering === null) delete settings.inboundFiltering;
    else if (change.inboundFiltering !== undefined) {
      settings.inboundFiltering = checkInboundFiltering(change.inboundFiltering, 'inboundFiltering', check);
    }
    return settings;
  }

  /** Stores the domain with these settings (checked already) in the caller's transaction. */
  saveSettings(manager: EntityManager, domain: Domain, settings: DomainSettings): Promise<Domain> {
    domain.settings = settings;
    return manager.getRepository(Domain).save(domain);
  }

  async remove(accountId: string, name: string): Promise<Domain> {
    const domain = await this.get(accountId, name);
    await this.domains.delete({ id: domain.id, accountId });
    await this.changes.changed(accountId, domain.name);
    return domain;
  }

  /** The TXT value that proves ownership (D-30): `<prefix>-verification=<token>`. */
  verificationRecord(domain: Domain): string {
    return `${this.config.keyPrefix}-verification=${domain.verificationToken}`;
  }

  dnsRecords(domain: Domain): DnsRecord[] {
    return dnsRecordsFor({
      domain: domain.name,
      verificationRecord: this.verificationRecord(domain),
      dkimSelector: domain.dkimSelector,
      dkimPublicKey: domain.dkimPublicKey,
      spfMechanism: this.config.spfMechanism,
    });
  }

  /** When an unverified domain fails: 72 h after it was added. */
  verificationDeadline(domain: Domain): Date {
    return new Date(domain.createdAt.getTime() + VERIFICATION_WINDOW_MS);
  }

  /** A new domain row with a fresh verification token and RSA-2048 DKIM key, not saved yet. */
  private async build(accountId: string, name: string): Promise<Domain> {
    const { privateKeyPem, publicKeyBase64 } = await generateDkimKey();
    const now = new Date();
    const verified = this.skipsVerification;
    return this.domains.create({
      id: newId('dom'),
      accountId,
      name,
      status: verified ? 'verified' : 'pending',
      verificationToken: randomBytes(16).toString('hex'),
      dkimSelector: dkimSelectorFor(now),
      dkimPrivateKey: this.secrets.seal(privateKeyPem),
      dkimPublicKey: publicKeyBase64,
      settings: {},
      verifiedAt: verified ? now : null,
      lastCheckedAt: null,
      lastCheckError: null,
    });
  }

  /** False under DOMAIN_VERIFICATION=skip, where a new domain is verified when it is added. */
  get verifiesByDns(): boolean {
    return !this.skipsVerification;
  }

  private get skipsVerification(): boolean {
    return this.config.env.DOMAIN_VERIFICATION === 'skip';
  }

  private isOverdue(domain: Domain, now: Date): boolean {
    return this.verificationDeadline(domain).getTime() <= now.getTime();
  }

  /** Persists the 72 h rule before a read, so every reader (and the database) sees the same state. */
  private async expireOverdue(accountId: string): Promise<void> {
    await this.domains
      .createQueryBuilder()
      .update(Domain)
      .set({ status: 'failed' })
      .where('account_id = :accountId AND status = :pending AND created_at <= :cutoff', {
        accountId,
        pending: 'pending',
        cutoff: new Date(Date.now() - VERIFICATION_WINDOW_MS),
      })
      .execute();
  }

  private takenBy(name: string): AppException {
    return new AppException(ErrorCode.Conflict, `The domain ${name} is verified by another account`);
  }

  /** A unique violation becomes the 409 it means; anything else is rethrown as is. */
  private conflictOf(err: unknown, name: string): unknown {
    const constraint = uniqueViolation(err);
    if (constraint === null) return err;
    if (constraint === 'UQ_domains_verified_name') return this.takenBy(name);
    return new AppException(ErrorCode.Conflict, `The domain ${name} is already added to this account`);
  }
}
