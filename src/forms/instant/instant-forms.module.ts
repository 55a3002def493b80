import { Module } from '@nestjs/common';
import { OutboxModule } from '../../outbox/outbox.module';
import { FormsModule } from '../forms.module';
import { SubmissionsModule } from '../submissions/submissions.module';
import { InstantFormsController } from './instant-forms.controller';
import { InstantFormsService } from './instant-forms.service';

/**
 * Instant forms: created, confirmed and listed here; their held submissions go out through the submission pipeline.
 * Imported by AppModule just before SubmissionsModule: `POST /instant/forms` must come before its `POST /{domain}/{form}`.
 */
@Module({
  imports: [FormsModule, OutboxModule, SubmissionsModule],
  controllers: [InstantFormsController],
  providers: [InstantFormsService],
})
export class InstantFormsModule {}
