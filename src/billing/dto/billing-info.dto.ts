import { ApiProperty } from '@nestjs/swagger';
import type { BillingSummary } from '../billing.service';
import { type BillingStatus, centsToAmount } from '../billing-terms';
import type { PlanCatalog } from '../plans';

export class CurrentPeriodDto {
  @ApiProperty({ example: 10_250, description: 'Emails of the current UTC calendar month: accepted recipients plus reported usage' })
  emailsSent: number;

  @ApiProperty({ type: Number, nullable: true, example: 10_000 })
  emailsIncluded: number | null;

  @ApiProperty({ example: 250, description: 'max(0, emailsSent − emailsIncluded)' })
  overage: number;

  @ApiProperty({ example: 0.25, description: 'overage × the plan’s rate per 1,000 emails, pro rata, rounded to the cent' })
  overageCost: number;

  @ApiProperty({
    example: 1_340,
    description: 'Forwarded emails of the month (one per destination): counted against forwards_per_month, not in emailsSent, not billed',
  })
  forwardsSent: number;
}

/** The spec's billing info. */
export class BillingInfoDto {
  @ApiProperty({ example: 'acc_4fQ2Zb8VtN1mKc7LpR3sWx' })
  tenantId: string;

  @ApiProperty({ example: 'starter', description: 'The subscribed plan, else free (or the tier the operator granted: pro, enterprise)' })
  plan: string;

  @ApiProperty({
    enum: ['active', 'canceled', 'none'],
    example: 'active',
    description: 'active while subscribed; canceled when the latest subscription was canceled; none when never subscribed',
  })
  status: BillingStatus;

  @ApiProperty({ example: 10, description: 'In currency units' })
  monthlyFee: number;

  @ApiProperty({ type: Number, nullable: true, example: 10_000, description: 'Emails included a month; null when not limited or billed' })
  includedEmails: number | null;

  @ApiProperty({ type: CurrentPeriodDto })
  currentPeriod: CurrentPeriodDto;

  @ApiProperty({ example: 48_120, description: 'Every email ever metered for the tenant' })
  totalEmailsSent: number;

  @ApiProperty({ format: 'date-time', description: 'When the billing customer was created (the account, without one)' })
  createdAt: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When the latest email was accepted or reported' })
  lastEmailSent: string | null;

  static from({ account, customer, terms, period, usage }: BillingSummary): BillingInfoDto {
    return {
      tenantId: account.id,
      plan: terms.plan,
      status: terms.status,
      monthlyFee: centsToAmount(terms.monthlyFeeCents),
      includedEmails: terms.includedEmails,
      currentPeriod: { ...period, forwardsSent: usage.monthForwards },
      totalEmailsSent: usage.totalEmails,
      createdAt: (customer?.createdAt ?? account.createdAt).toISOString(),
      lastEmailSent: usage.lastEmailAt?.toISOString() ?? null,
    };
  }
}

export class PlanDto {
  @ApiProperty({ example: 'starter' })
  name: string;

  @ApiProperty({ example: 10, description: 'In currency units' })
  monthlyFee: number;

  @ApiProperty({ example: 10_000 })
  includedEmails: number;

  @ApiProperty({ example: 1, description: 'What 1,000 emails beyond includedEmails cost, charged pro rata per email' })
  overagePer1000: number;
}

export class PlanListDto {
  @ApiProperty({ type: [PlanDto] })
  plans: PlanDto[];

  static from(catalog: PlanCatalog): PlanListDto {
    return {
      plans: catalog.plans.map((plan) => ({
        name: plan.name,
        monthlyFee: centsToAmount(plan.monthlyFeeCents),
        includedEmails: plan.includedEmails,
        overagePer1000: centsToAmount(plan.overageCentsPer1000),
      })),
    };
  }
}
