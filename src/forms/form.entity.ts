import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import { Collection } from './collections/collection.entity';
import { Domain } from '../domains/domain.entity';
import type { FormSettings } from './form-settings';

/**
 * Where a form lives: under a domain (`/{domain}/{slug}`), in a collection (`/c/{collection}/{slug}`), on its
 * own (`/f/{id}`, `/api/forms`), or as an instant form whose recipient confirms first (D-29).
 */
export type FormKind = 'domain' | 'collection' | 'standalone' | 'instant';

/** The slug of a domain's contact form: `/{domain}/send` and `/v1/{domain}/send` post to it (D-29). */
export const CONTACT_FORM_SLUG = 'send';

/** Every form, whatever posts to it: one entity, one settings type, one submission path. */
@Entity('forms')
@Index('UQ_forms_domain_slug', ['domainId', 'slug'], { unique: true, where: '"domain_id" IS NOT NULL' })
@Index('UQ_forms_collection_slug', ['collectionId', 'slug'], { unique: true, where: '"collection_id" IS NOT NULL' })
@Index('IX_forms_account_created', ['accountId', 'createdAt'])
export class Form extends AccountOwned {
  @Column({ type: 'varchar', length: 12 })
  kind: FormKind;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** The form's slug under its domain or collection; null for standalone and instant forms. */
  @Column({ type: 'varchar', length: 63, nullable: true })
  slug: string | null;

  @Column({ type: 'varchar', length: 40, nullable: true })
  domainId: string | null;

  @ManyToOne(() => Domain, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'domain_id' })
  domain?: Domain | null;

  @Column({ type: 'varchar', length: 40, nullable: true })
  collectionId: string | null;

  @ManyToOne(() => Collection, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'collection_id' })
  collection?: Collection | null;

  @Column({ type: 'jsonb', default: {} })
  settings: FormSettings;

  /** When the recipient confirmed an instant form; set at creation for every other kind. */
  @Column({ type: 'timestamptz', nullable: true })
  confirmedAt: Date | null;

  /** sha256 of the instant form's confirmation token (the link emailed to its recipient). */
  @Index('UQ_forms_confirmation_token', { unique: true, where: '"confirmation_token_hash" IS NOT NULL' })
  @Column({ type: 'char', length: 64, nullable: true })
  confirmationTokenHash: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
