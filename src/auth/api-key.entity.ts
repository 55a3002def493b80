import { Column, CreateDateColumn, Entity, Index } from 'typeorm';
import { AccountOwned } from '../accounts/account-owned';
import type { KeyRestrictions } from './auth-context';
import type { KeyType, Permission } from './permissions';

/** An API key. Only the sha256 of the secret is stored (D-4). */
@Entity('api_keys')
@Index(['accountId'])
export class ApiKey extends AccountOwned {
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 10 })
  keyType: KeyType;

  @Index({ unique: true })
  @Column({ type: 'char', length: 64 })
  keyHash: string;

  /** Masked form for listings: `svc_sk_admin_…9f3a`. */
  @Column({ type: 'varchar', length: 64 })
  keyPreview: string;

  @Column({ type: 'varchar', length: 253, nullable: true })
  domainScope: string | null;

  @Column({ type: 'text', array: true })
  permissions: Permission[];

  /**
   * Requests per hour; null when the key has no hourly limit of its own (an account's first admin key, the
   * operator's bootstrap key): its account's plan bounds it.
   */
  @Column({ type: 'integer', nullable: true })
  rateLimit: number | null;

  @Column({ type: 'jsonb', default: {} })
  restrictions: KeyRestrictions;

  @Column({ type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
