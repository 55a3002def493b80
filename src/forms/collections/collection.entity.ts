import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../../accounts/account-owned';
import { Project } from '../../projects/project.entity';

/** A named set of forms (Form rows), posted to at /c/{collection}/{form}; optionally part of a project. */
@Entity('collections')
@Index('UQ_collections_account_slug', ['accountId', 'slug'], { unique: true })
export class Collection extends AccountOwned {
  @Column({ type: 'varchar', length: 63 })
  slug: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Index()
  @Column({ type: 'varchar', length: 40, nullable: true })
  projectId: string | null;

  @ManyToOne(() => Project, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'project_id' })
  project?: Project | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
