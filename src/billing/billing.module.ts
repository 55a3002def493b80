import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfigService } from '../config/app-config.service';
import { QuotasModule } from '../quotas/quotas.module';
import { BillingCustomer } from './billing-customer.entity';
import { BillingSubscription } from './billing-subscription.entity';
import { BillingController } from './billing.controller';
import { BillingService } from './billing.service';
import { PlanChangeRepository } from './plan-change.repository';
import { PlanCatalog } from './plans';

/** Billing customers, subscriptions to the plans of D-32, recorded usage and billing info (`/api/billing/*`). */
@Module({
  imports: [TypeOrmModule.forFeature([BillingCustomer, BillingSubscription]), QuotasModule],
  controllers: [BillingController],
  providers: [
    // Read and checked while the app is built: a bad BILLING_PLANS_FILE stops start-up naming the file and field.
    {
      provide: PlanCatalog,
      inject: [AppConfigService],
      useFactory: (config: AppConfigService) => PlanCatalog.load(config.env.BILLING_PLANS_FILE),
    },
    BillingService,
    PlanChangeRepository,
  ],
  exports: [PlanCatalog, BillingService],
})
export class BillingModule {}
