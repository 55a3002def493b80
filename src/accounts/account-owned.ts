import { Column, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from './account.entity';

/**
 * The columns every tenant-owned row starts with (D-1): a prefixed id and the owning account, whose
 * deletion takes the row with it. Entities extend it; TypeORM copies the columns into each table.
 */
export abstract class AccountOwned {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  id: string;

  @Column({ type: 'varchar', length: 40 })
  accountId: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;
}
