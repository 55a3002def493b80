import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { AccountTier } from '../config/app-config.service';

/** A tenant (D-1): everything else belongs to exactly one account. */
@Entity('accounts')
export class Account {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  id: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 16 })
  tier: AccountTier;

  /** The operator account runs the installation: its admin keys reach /admin/* (D-2). */
  @Column({ type: 'boolean', default: false })
  isOperator: boolean;

  /** Enterprise limits and account-wide settings; empty means the plan's defaults. */
  @Column({ type: 'jsonb', default: {} })
  // `any`, not `unknown`: TypeORM rejects unknown in jsonb inserts.
  settings: Record<string, any>;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
