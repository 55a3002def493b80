import type { Account } from '../accounts/account.entity';
import type { EmailTotals } from '../quotas/account-usage.repository';
import type { BillingCustomer } from './billing-customer.entity';
import type { BillingPeriod } from './billing-period';
import type { BillingTerms } from './billing-terms';

/** A tenant's billing as it stands: what GET /api/billing/info and the usage answer are made from. */
export interface BillingSummary {
  account: Account;
  customer: BillingCustomer | null;
  terms: BillingTerms;
  period: BillingPeriod;
  usage: EmailTotals;
}
