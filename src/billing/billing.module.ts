import { Module } from '@nestjs/common';
import { QuotasModule } from '../quotas/quotas.module';

/** Billing customers, subscriptions to the plans of D-32, recorded usage and billing info (`/api/billing/*`). */
@Module({
  imports: [QuotasModule],
})
export class BillingModule {}
