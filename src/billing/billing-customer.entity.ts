import { Column, CreateDateColumn, Entity, Index } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';

/** Who pays for a tenant (`cus_…`): one per account (D-32). */
@Entity('billing_customers')
@Index('UQ_billing_customers_account', ['accountId'], { unique: true })
export class BillingCustomer extends AccountOwned {
  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
