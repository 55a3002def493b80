import { Module } from '@nestjs/common';
import { OutboxModule } from '../../outbox/outbox.module';
import { SuppressionModule } from '../../suppression/suppression.module';
import { OwnerNotifications } from './owner-notifications';
import { SubmissionNotifications } from './submission-notifications';

/** Form notifications to the owner: held when a recipient is suppressed, and what became of them. */
@Module({
  imports: [OutboxModule, SuppressionModule],
  providers: [OwnerNotifications, SubmissionNotifications],
  exports: [OwnerNotifications, SubmissionNotifications],
})
export class NotificationsModule {}
