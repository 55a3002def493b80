import { Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/** A mailing list of an account (`list_…`), named uniquely within the account. */
@Entity('mailing_lists')
@Index('UQ_mailing_lists_account_name', ['accountId', 'name'], { unique: true })
@Index('IX_mailing_lists_account_created', ['accountId', 'createdAt', 'id'])
export class MailingList extends AccountOwned {
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 1000, nullable: true })
  description: string | null;

  /** Millisecond precision, so a list cursor built from it in JavaScript matches the stored value exactly. */
  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
