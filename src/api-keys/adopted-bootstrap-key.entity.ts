import { Column, CreateDateColumn, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../accounts/account.entity';

/**
 * A BOOTSTRAP_ADMIN_KEY secret that became a key once (by its sha256): never adopted again, so a deleted
 * bootstrap key stays deleted while the variable still holds it.
 */
@Entity('adopted_bootstrap_keys')
export class AdoptedBootstrapKey {
  @PrimaryColumn({ type: 'char', length: 64 })
  keyHash: string;

  @Column({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @CreateDateColumn({ type: 'timestamptz' })
  adoptedAt: Date;
}
