import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/** `email`: Handlebars, sent with /email/send (D-21). `form`, `acknowledgment`: Liquid, for form submissions (D-28). */
export const TEMPLATE_TYPES = ['email', 'form', 'acknowledgment'] as const;
export type TemplateType = (typeof TEMPLATE_TYPES)[number];
/** The types the forms pipeline renders. */
export const FORM_TEMPLATE_TYPES: readonly TemplateType[] = ['form', 'acknowledgment'];

/** An email template stored through the API, named uniquely within its account. */
@Entity('templates')
@Index('UQ_templates_account_name', ['accountId', 'name'], { unique: true })
export class Template extends AccountOwned {
  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 500, nullable: true })
  description: string | null;

  @Column({ type: 'varchar', length: 20, default: 'email' })
  type: TemplateType;

  @Column({ type: 'text' })
  subject: string;

  @Column({ type: 'text', nullable: true })
  html: string | null;

  @Column({ type: 'text', nullable: true })
  text: string | null;

  /** Default values of the placeholders: a rendering sees them unless its own variables (or form fields) say otherwise. */
  @Column({ type: 'jsonb', nullable: true })
  // `any`, not `unknown`: TypeORM rejects unknown in jsonb inserts.
  variables: Record<string, any> | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
