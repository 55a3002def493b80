import { Module } from '@nestjs/common';
import { OutboxModule } from '../../outbox/outbox.module';
import { FormsModule } from '../forms.module';
import { SubmissionsModule } from '../submissions/submissions.module';
import { SpamFolderController } from './spam-folder.controller';
import { SpamFolderService } from './spam-folder.service';

/** A form's spam folder: what the spam checks kept back, released by the owner through the submission pipeline. */
@Module({
  imports: [FormsModule, OutboxModule, SubmissionsModule],
  controllers: [SpamFolderController],
  providers: [SpamFolderService],
})
export class SpamFolderModule {}
