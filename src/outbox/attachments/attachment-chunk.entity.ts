import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { AttachmentBlob } from './attachment-blob.entity';

/** One chunk of a blob (CHUNK_BYTES, the last shorter), read one at a time when a message is sent. */
@Entity('attachment_chunks')
export class AttachmentChunk {
  @PrimaryColumn({ type: 'varchar', length: 64, primaryKeyConstraintName: 'PK_attachment_chunks' })
  hash: string;

  /** 0 for the first chunk. */
  @PrimaryColumn({ type: 'int', primaryKeyConstraintName: 'PK_attachment_chunks' })
  seq: number;

  @ManyToOne(() => AttachmentBlob, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'hash', foreignKeyConstraintName: 'FK_attachment_chunks_blob' })
  blob?: AttachmentBlob;

  @Column({ type: 'bytea' })
  data: Buffer;
}
