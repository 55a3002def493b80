import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { Domain } from './domain.entity';

/** What a sender needs to sign mail for a verified domain. */
export interface DkimSigningKey {
  domainName: string;
  keySelector: string;
  privateKey: string;
}

/** Domains of an account: verification, DKIM keys and settings (D-30). The only writer of domains. */
@Injectable()
export class DomainsService {
  constructor(
    @InjectRepository(Domain) private readonly domains: Repository<Domain>,
    private readonly secrets: SecretBox,
  ) {}

  /** The account's verified domain of that name, or null. */
  findVerified(accountId: string, name: string): Promise<Domain | null> {
    return this.domains.findOneBy({ accountId, name: name.toLowerCase(), status: 'verified' });
  }

  /** The DKIM key of a domain, decrypted, in the shape nodemailer's `dkim` option takes. */
  signingKey(domain: Domain): DkimSigningKey {
    return { domainName: domain.name, keySelector: domain.dkimSelector, privateKey: this.secrets.open(domain.dkimPrivateKey) };
  }
}
