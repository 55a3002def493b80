import { Module } from '@nestjs/common';
import { OutboxModule } from '../../outbox/outbox.module';
import { SuppressionModule } from '../../suppression/suppression.module';
import { FormsModule } from '../forms.module';
import { SubmissionsModule } from '../submissions/submissions.module';
import { HeldNotificationReleases } from './held-notification-releases';

/** Sends held form notifications once their recipients' suppression is lifted. */
@Module({
  imports: [FormsModule, SubmissionsModule, OutboxModule, SuppressionModule],
  providers: [HeldNotificationReleases],
})
export class NotificationReleasesModule {}
