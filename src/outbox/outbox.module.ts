import { Module } from '@nestjs/common';
import { QuotasModule } from '../quotas/quotas.module';
import { SuppressionModule } from '../suppression/suppression.module';
import { AcceptanceRepository } from './acceptance.repository';
import { AttachmentStore } from './attachments/attachment-store';
import { EmailQueue } from './email.queue';
import { LateEventsRepository } from './late-events.repository';
import { OutboxService } from './outbox.service';

/**
 * The message store and the way into it: OutboxService accepts every email, the `email` queue's producer takes
 * it to delivery, late events (tracking, the provider) are written to it, attachment bytes are kept for it.
 */
@Module({
  imports: [QuotasModule, SuppressionModule],
  providers: [OutboxService, AcceptanceRepository, AttachmentStore, EmailQueue, LateEventsRepository],
  exports: [OutboxService, EmailQueue, LateEventsRepository, AttachmentStore],
})
export class OutboxModule {}
