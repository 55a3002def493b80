import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** The primary key's name: a unique violation on it means the key was used already. */
export const IDEMPOTENCY_RECORD_KEY = 'PK_idempotency_records';

/**
 * The first answer to an Idempotency-Key (D-17), kept in PostgreSQL beside what the request created: a route
 * that writes rows writes this record in the same statement or transaction, so a committed effect always has
 * its answer, whatever happened to Redis afterwards.
 */
@Entity('idempotency_records')
@Index('IX_idempotency_records_expires', ['expiresAt'])
export class IdempotencyRecord {
  /** `key:<API key id>` (D-36: two keys of one account never collide), or `ip:<address>` for calls without a credential. */
  @PrimaryColumn({ type: 'varchar', length: 80, primaryKeyConstraintName: IDEMPOTENCY_RECORD_KEY })
  scope: string;

  /**
   * Method and path (`POST /v1/send`, `POST /f/<formId>`): the same key on another route is another record. The
   * default is for processes of the previous version during a rolling upgrade: they write no route, and their
   * records (account-scoped) never match this version's.
   */
  @PrimaryColumn({ type: 'text', default: '', primaryKeyConstraintName: IDEMPOTENCY_RECORD_KEY })
  route: string;

  /** sha256 of the Idempotency-Key header. */
  @PrimaryColumn({ type: 'char', length: 64, primaryKeyConstraintName: IDEMPOTENCY_RECORD_KEY })
  keyHash: string;

  /** sha256 of method, path and body: another body under the same key is a conflict. */
  @Column({ type: 'char', length: 64 })
  requestHash: string;

  @Column({ type: 'smallint' })
  statusCode: number;

  @Column({ type: 'jsonb' })
  body: unknown;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @Column({ type: 'timestamptz' })
  expiresAt: Date;
}
