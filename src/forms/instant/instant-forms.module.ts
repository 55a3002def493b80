import { Module } from '@nestjs/common';
import { OutboxModule } from '../../outbox/outbox.module';
import { QuotasModule } from '../../quotas/quotas.module';
import { FormsModule } from '../forms.module';
import { SubmissionsModule } from '../submissions/submissions.module';
import { HeldSubmissionReleases } from './held-submission-releases';
import { InstantFormsController } from './instant-forms.controller';
import { InstantFormsService } from './instant-forms.service';

/**
 * Instant forms: created, confirmed and listed here; their held submissions go out through the submission pipeline's
 * mail, a page at a time (HeldSubmissionReleases).
 * Imported by AppModule just before SubmissionsModule: `POST /instant/forms` must come before its `POST /{domain}/{form}`.
 */
@Module({
  imports: [FormsModule, OutboxModule, QuotasModule, SubmissionsModule],
  controllers: [InstantFormsController],
  providers: [InstantFormsService, HeldSubmissionReleases],
})
export class InstantFormsModule {}
