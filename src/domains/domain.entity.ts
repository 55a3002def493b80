import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import type { InboundFiltering } from './domain-settings';

export type DomainStatus = 'pending' | 'verified' | 'failed';

/** Settings kept on a domain (PUT /domains/{domain}); validated by the domains service. Its forms are Form rows. */
export interface DomainSettings {
  /** Who gets /{domain}/send and /v1/{domain}/send submissions. */
  contactRecipients?: string[];
  /** alias (local part) or '*' → destinations. Served by the forwarding feature. */
  forwarding?: Record<string, string[]>;
  /** Spam threshold and attachment types of forwarded mail; absent: INBOUND_FILTERING_DEFAULTS. */
  inboundFiltering?: InboundFiltering;
}

/** A sending / receiving domain of an account, verified by a DNS TXT record, with its DKIM key (D-30). */
@Entity('domains')
@Index('UQ_domains_account_name', ['accountId', 'name'], { unique: true })
@Index('UQ_domains_verified_name', ['name'], { unique: true, where: `"status" = 'verified'` })
export class Domain extends AccountOwned {
  /** Lower-cased domain name. */
  @Column({ type: 'varchar', length: 253 })
  name: string;

  @Column({ type: 'varchar', length: 10 })
  status: DomainStatus;

  @Column({ type: 'varchar', length: 64 })
  verificationToken: string;

  @Column({ type: 'varchar', length: 63 })
  dkimSelector: string;

  /** PEM (PKCS#8) private key, sealed with SecretBox: never leaves the server. */
  @Column({ type: 'text' })
  dkimPrivateKey: string;

  /** Base64 of the DER SubjectPublicKeyInfo: the p= value of the DKIM TXT record. */
  @Column({ type: 'text' })
  dkimPublicKey: string;

  @Column({ type: 'jsonb', default: {} })
  settings: DomainSettings;

  @Column({ type: 'timestamptz', nullable: true })
  verifiedAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  lastCheckedAt: Date | null;

  /** Why the last DNS check did not verify the domain (shown to the user); null after success. */
  @Column({ type: 'varchar', length: 500, nullable: true })
  lastCheckError: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
