import { Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Message } from '../message.entity';
import { AttachmentBlob } from './attachment-blob.entity';

/**
 * A message's hold on a blob, written in the message's acceptance: a blob that no message refers to any more
 * (released when retention clears the message's content) is deleted by the sweep. A blob referred to cannot be
 * deleted (the foreign key has no cascade).
 */
@Entity('message_attachments')
@Index('IX_message_attachments_hash', ['hash'])
export class MessageAttachmentReference {
  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_message_attachments' })
  messageId: string;

  @PrimaryColumn({ type: 'varchar', length: 64, primaryKeyConstraintName: 'PK_message_attachments' })
  hash: string;

  @ManyToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id', foreignKeyConstraintName: 'FK_message_attachments_message' })
  message?: Message;

  @ManyToOne(() => AttachmentBlob)
  @JoinColumn({ name: 'hash', foreignKeyConstraintName: 'FK_message_attachments_blob' })
  blob?: AttachmentBlob;
}
