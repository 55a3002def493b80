import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * Attachment bytes, stored once however many messages carry them (AttachmentStore), found by their SHA-256.
 * The row is written before its chunks and its references.
 */
@Entity('attachment_blobs')
@Index('IX_attachment_blobs_referenced_at', ['referencedAt'])
export class AttachmentBlob {
  /** SHA-256 of the bytes, lower-case hex. */
  @PrimaryColumn({ type: 'varchar', length: 64, primaryKeyConstraintName: 'PK_attachment_blobs' })
  hash: string;

  @Column({ type: 'int' })
  size: number;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  /** Last time a message being accepted took these bytes: the sweep leaves a blob alone for a while after it. */
  @Column({ type: 'timestamptz', default: () => 'now()' })
  referencedAt: Date;
}
