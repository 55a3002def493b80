import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { AttachmentBlob } from '../../outbox/attachments/attachment-blob.entity';
import { FormSubmission } from '../form-submission.entity';

/**
 * A submission's hold on the stored bytes of one of its uploads (the attachment store's blob): the file outlives the
 * notification that carried it, and the store's sweep leaves a blob alone while a submission refers to it. Deleted
 * with the submission (its form, its account).
 */
@Entity('form_submission_files')
@Index('IX_form_submission_files_hash', ['hash'])
export class SubmissionFileReference {
  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_form_submission_files' })
  submissionId: string;

  /** The file's position in the submission's `files`. */
  @PrimaryColumn({ type: 'int', primaryKeyConstraintName: 'PK_form_submission_files' })
  seq: number;

  @Column({ type: 'varchar', length: 64 })
  hash: string;

  @ManyToOne(() => FormSubmission, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'submission_id', foreignKeyConstraintName: 'FK_form_submission_files_submission' })
  submission?: FormSubmission;

  @ManyToOne(() => AttachmentBlob)
  @JoinColumn({ name: 'hash', foreignKeyConstraintName: 'FK_form_submission_files_blob' })
  blob?: AttachmentBlob;
}
