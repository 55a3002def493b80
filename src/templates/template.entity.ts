import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/** A Handlebars email template stored through the API (D-21), named uniquely within its account. */
@Entity('templates')
@Index('UQ_templates_account_name', ['accountId', 'name'], { unique: true })
export class Template extends AccountOwned {
  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 500, nullable: true })
  description: string | null;

  @Column({ type: 'text' })
  subject: string;

  @Column({ type: 'text', nullable: true })
  html: string | null;

  @Column({ type: 'text', nullable: true })
  text: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
