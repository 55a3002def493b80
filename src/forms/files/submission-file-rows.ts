import type { CompanionStatement } from '../../outbox/acceptance.repository';

/** The submission's references to its stored uploads (SubmissionFileReference), committed with it. */
export function submissionFileRows(submissionId: string, stored: readonly { hash: string }[]): CompanionStatement[] {
  return stored.map(({ hash }, seq) => ({ table: 'form_submission_files', values: { submission_id: submissionId, seq, hash } }));
}
