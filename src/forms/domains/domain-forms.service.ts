import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException } from '../../common/errors/app.exception';
import { SettingsChecker } from '../../common/settings-checker';
import type { Domain, DomainSettings } from '../../domains/domain.entity';
import { DomainSettingsChange, DomainsService } from '../../domains/domains.service';
import { CONTACT_FORM_SLUG } from '../form.entity';
import { checkFormMap, FormSettings } from '../form-settings';
import { FormsService } from '../forms.service';

/** A change of a domain's settings as PUT /domains/{domain} takes it: the domain's sections and its forms. */
export interface DomainChange extends DomainSettingsChange {
  forms?: unknown;
}

/** Form slugs a domain cannot use: `/{domain}/send` is the contact endpoint (D-29). */
const RESERVED_FORM_SLUGS = [CONTACT_FORM_SLUG];

/**
 * A domain together with its forms, as /domains and the configuration file show and write them: the domain's part
 * through DomainsService, the forms' through FormsService, in one transaction.
 */
@Injectable()
export class DomainFormsService {
  constructor(
    private readonly domains: DomainsService,
    private readonly forms: FormsService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** The domain's forms as the configuration file shows them (its contact form is `contactRecipients`). */
  async formsOf(domain: Domain): Promise<Record<string, FormSettings>> {
    const forms = await this.forms.mapOf({ domainId: domain.id });
    delete forms[CONTACT_FORM_SLUG];
    return forms;
  }

  /** Validates and stores settings sections and forms; every bad value is named in one 400. */
  async updateSettings(accountId: string, name: string, change: DomainChange): Promise<Domain> {
    const domain = await this.domains.get(accountId, name);
    const check = new SettingsChecker();
    const settings = this.domains.changedSettings(domain, change, check);
    let forms: Record<string, FormSettings> | undefined;
    if (change.forms === null) forms = {};
    else if (change.forms !== undefined) {
      forms = checkFormMap(change.forms, 'forms', check, { requireRecipients: false, reserved: RESERVED_FORM_SLUGS });
    }
    if (check.errors.length > 0) throw AppException.validation(check.errors);

    return this.dataSource.transaction(async (manager) => {
      const saved = await this.domains.saveSettings(manager, domain, settings);
      if (forms) await this.forms.replaceMap(manager, accountId, { domainId: domain.id }, forms, RESERVED_FORM_SLUGS);
      return saved;
    });
  }

  /**
   * Writes the declarative configuration's domains in the caller's transaction (checked already): each of
   * `upserts` is created if new, its settings and forms made exactly these (the contact form kept); `remove` are deleted.
   */
  async applyConfig(
    manager: EntityManager,
    accountId: string,
    upserts: { name: string; settings: DomainSettings; forms: Record<string, FormSettings> }[],
    remove: string[],
  ): Promise<void> {
    const written = await this.domains.applyConfig(manager, accountId, upserts, remove);
    for (const { name, forms } of upserts) {
      await this.forms.replaceMap(manager, accountId, { domainId: written.get(name)!.id }, forms, RESERVED_FORM_SLUGS);
    }
  }
}
