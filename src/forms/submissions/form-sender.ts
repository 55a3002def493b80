import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { InvalidatedCache } from '../../common/invalidated-cache';
import { AppConfigService } from '../../config/app-config.service';
import { DomainChanges } from '../../domains/domain-changes';
import { Domain } from '../../domains/domain.entity';
import type { Mailbox } from '../../outbox/outbox.service';
import type { Form } from '../form.entity';

/** The From of a form's notification and acknowledgment, and whether it is Mailroom's own address. */
export interface FormSender {
  from: Mailbox;
  /** From FORMS_FROM (see Message.systemSender): signed, if at all, with the operator's key. */
  systemSender: boolean;
}

/** The account's sending domain is looked up once per this period per account, not once per post. */
const ACCOUNT_DOMAIN_CACHE_MS = 10_000;

/**
 * Form mail goes out on the tenant's name when it can: from forms@ its form's domain if that is verified, else
 * forms@ the account's first verified domain (signed with that domain's DKIM key at delivery); FORMS_FROM only
 * for an account without one. A form's own domain can be pending or failed (forms are configured before DNS is):
 * mail from it would fail at delivery, which signs only verified domains.
 */
export function formSender(form: Pick<Form, 'domain'>, accountDomain: string | null, formsFrom: Mailbox, formName: string): FormSender {
  const name = formName.replace(/[\r\n"]/g, ' ').slice(0, 100);
  const domain = form.domain?.status === 'verified' ? form.domain.name : accountDomain;
  if (domain) return { from: { name, address: `forms@${domain}` }, systemSender: false };
  return { from: { name: formsFrom.name || name, address: formsFrom.address }, systemSender: true };
}

@Injectable()
export class FormSenders {
  private readonly accountDomains = new InvalidatedCache<string, string | null>(ACCOUNT_DOMAIN_CACHE_MS);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfigService,
    changes: DomainChanges,
  ) {
    // A deleted domain sends no more notifications, on any instance.
    changes.invalidates(this.accountDomains);
  }

  async senderOf(form: Form, formName: string): Promise<FormSender> {
    const accountDomain = form.domain?.status === 'verified' ? null : await this.accountDomain(form.accountId);
    return formSender(form, accountDomain, this.config.formsFrom, formName);
  }

  /** The account's verified domain that was verified first (the same one every time), or null. */
  private accountDomain(accountId: string): Promise<string | null> {
    const lookUp = async () => {
      const domain = await this.dataSource.getRepository(Domain).findOne({
        where: { accountId, status: 'verified' },
        select: { name: true },
        order: { verifiedAt: 'ASC', name: 'ASC' },
      });
      return domain?.name ?? null;
    };
    // Only hits are kept: a domain verified a moment ago is used at once.
    return this.accountDomains.load(accountId, lookUp, (name) => name !== null);
  }
}
