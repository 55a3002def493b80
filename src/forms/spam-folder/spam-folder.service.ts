import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { OutboxService } from '../../outbox/outbox.service';
import { RedisService } from '../../redis/redis.service';
import type { FormSubmission, NotificationOptions } from '../form-submission.entity';
import { FormsService } from '../forms.service';
import { SubmissionMail } from '../submissions/submission-mail';
import { submissionMetering } from '../submissions/submission-record';

/** How long one release may hold its submission; a second call meanwhile is answered 409. */
const RELEASE_LOCK_MS = 60_000;

/**
 * The spam folder's "not spam": a spam submission becomes accepted and its notification goes to the owner, as if it
 * had been accepted when it came (no acknowledgment: the visitor was answered then).
 */
@Injectable()
export class SpamFolderService {
  constructor(
    private readonly forms: FormsService,
    private readonly submissionMail: SubmissionMail,
    private readonly outbox: OutboxService,
    private readonly redis: RedisService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /**
   * Releases the submission from the spam folder, once: its status, its notification, the submission it counts for
   * (a spam submission counted none) and its `form.submission` event commit together. Releasing an accepted
   * submission again changes nothing and answers it as it is; a held one (an unconfirmed instant form's) is a 409.
   */
  async notSpam(accountId: string, formId: string, submissionId: string): Promise<FormSubmission> {
    const form = await this.forms.get(accountId, formId);
    const released = await this.redis.withLock(this.redis.key('forms', 'not-spam', submissionId), RELEASE_LOCK_MS, async () => {
      const submission = await this.forms.submission(accountId, form.id, submissionId);
      if (submission.status === 'accepted') return submission;
      if (submission.status !== 'spam') {
        throw new AppException(ErrorCode.Conflict, 'The submission is not spam: it waits for the instant form to be confirmed');
      }
      const stored = { ...submission, heldAttachments: null, notificationOptions: await this.notificationOptions(submissionId) };
      const release = await this.submissionMail.release(form, stored, 'spam', await this.keptFiles(submissionId));
      await this.outbox.accept({
        messages: release.messages,
        statements: release.statements,
        metering: submissionMetering(accountId, 1, release.messages),
      });
      return this.forms.submission(accountId, form.id, submissionId);
    });
    if (!released)
      throw new AppException(ErrorCode.Conflict, 'The submission is being released by another request: read it again in a moment');
    return released;
  }

  /** What the submission's post asked of its emails (`_subject`, `_cc`, …): listings do not read it. */
  private async notificationOptions(submissionId: string): Promise<NotificationOptions | null> {
    const rows: { notification_options: NotificationOptions | null }[] = await this.dataSource.query(
      'SELECT notification_options FROM form_submissions WHERE id = $1',
      [submissionId],
    );
    return rows[0]?.notification_options ?? null;
  }

  /** The positions of the submission's files whose bytes are stored. */
  private async keptFiles(submissionId: string): Promise<Set<number>> {
    const rows: { seq: number }[] = await this.dataSource.query('SELECT seq FROM form_submission_files WHERE submission_id = $1', [
      submissionId,
    ]);
    return new Set(rows.map((row) => row.seq));
  }
}
