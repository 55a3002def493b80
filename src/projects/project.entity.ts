import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/** A project groups an account's collections (the configuration file's `project: {name, slug}`). */
@Entity('projects')
@Index('UQ_projects_account_slug', ['accountId', 'slug'], { unique: true })
export class Project extends AccountOwned {
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 63 })
  slug: string;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
