import { ApiProperty } from '@nestjs/swagger';
import type { BillingSummary } from '../billing-summary';
import type { BillingPeriod } from '../billing-period';
import { type BillingStatus, centsToAmount } from '../billing-terms';
import type { PlanCatalog } from '../plans';

export class PeriodLineDto {
  @ApiProperty({
    example: 'starter',
    description: 'The plan of this part of the month: the subscribed one, else free (or the tier the operator granted: pro, enterprise)',
  })
  plan: string;

  @ApiProperty({
    format: 'date-time',
    example: '2026-11-01T00:00:00.000Z',
    description: 'The month’s start, or the plan change that began this part',
  })
  from: string;

  @ApiProperty({
    format: 'date-time',
    example: '2026-11-16T00:00:00.000Z',
    description: 'The plan change that ended this part; the month’s end for the current part',
  })
  to: string;

  @ApiProperty({
    example: 10,
    description:
      'The plan’s monthly fee for this part’s share of the month (to the second) or for the share of its included emails the part used, whichever is more, rounded to the cent',
  })
  fee: number;

  @ApiProperty({ example: 10_250, description: 'Emails sent in this part' })
  emailsSent: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 10_000,
    description: 'The plan’s included emails a month; null when not limited or billed',
  })
  emailsIncluded: number | null;

  @ApiProperty({
    example: 250,
    description:
      'Emails of this part sent once the month’s running total had passed emailsIncluded: max(0, end total − max(emailsIncluded, start total))',
  })
  overage: number;

  @ApiProperty({ example: 0.25, description: 'overage × the plan’s rate per 1,000 emails, pro rata, rounded to the cent' })
  overageCost: number;
}

export class CurrentPeriodDto {
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:00.000Z', description: 'The current UTC calendar month’s start' })
  start: string;

  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z', description: 'Its end (the next month’s start)' })
  end: string;

  @ApiProperty({ example: 51_500, description: 'Emails of the current UTC calendar month: accepted recipients plus reported usage' })
  emailsSent: number;

  @ApiProperty({ type: Number, nullable: true, example: 50_000, description: 'The current plan’s included emails' })
  emailsIncluded: number | null;

  @ApiProperty({
    example: 1_750,
    description: 'The lines’ overage; without a plan change in the month max(0, emailsSent − emailsIncluded)',
  })
  overage: number;

  @ApiProperty({ example: 1.75, description: 'The lines’ overage cost' })
  overageCost: number;

  @ApiProperty({ example: 29.88, description: 'The lines’ fees' })
  fees: number;

  @ApiProperty({ example: 31.63, description: 'fees + overageCost' })
  amountDue: number;

  @ApiProperty({
    type: [PeriodLineDto],
    description: 'The month cut at each subscribe, plan change and cancel: one line per part, oldest first',
    example: [
      {
        plan: 'starter',
        from: '2026-11-01T00:00:00.000Z',
        to: '2026-11-16T00:00:00.000Z',
        fee: 10,
        emailsSent: 10_250,
        emailsIncluded: 10_000,
        overage: 250,
        overageCost: 0.25,
      },
      {
        plan: 'developer',
        from: '2026-11-16T00:00:00.000Z',
        to: '2026-12-01T00:00:00.000Z',
        fee: 19.88,
        emailsSent: 41_250,
        emailsIncluded: 50_000,
        overage: 1_500,
        overageCost: 1.5,
      },
    ],
  })
  lines: PeriodLineDto[];

  @ApiProperty({
    example: 1_340,
    description: 'Forwarded emails of the month (one per destination): counted against forwards_per_month, not in emailsSent, not billed',
  })
  forwardsSent: number;

  static from(period: BillingPeriod, forwardsSent: number): CurrentPeriodDto {
    const overageCost = centsToAmount(period.overageCostCents);
    return {
      start: period.start.toISOString(),
      end: period.end.toISOString(),
      emailsSent: period.emailsSent,
      emailsIncluded: period.emailsIncluded,
      overage: period.overage,
      overageCost,
      fees: centsToAmount(period.feesCents),
      amountDue: centsToAmount(period.feesCents + period.overageCostCents),
      lines: period.lines.map((line) => ({
        plan: line.plan,
        from: line.from.toISOString(),
        to: line.to.toISOString(),
        fee: centsToAmount(line.feeCents),
        emailsSent: line.emailsSent,
        emailsIncluded: line.emailsIncluded,
        overage: line.overage,
        overageCost: centsToAmount(line.overageCostCents),
      })),
      forwardsSent,
    };
  }
}

/** The spec's billing info. */
export class BillingInfoDto {
  @ApiProperty({ example: 'acc_4fQ2Zb8VtN1mKc7LpR3sWx' })
  tenantId: string;

  @ApiProperty({ example: 'developer', description: 'The subscribed plan, else free (or the tier the operator granted: pro, enterprise)' })
  plan: string;

  @ApiProperty({
    enum: ['active', 'canceled', 'none'],
    example: 'active',
    description: 'active while subscribed; canceled when the latest subscription was canceled; none when never subscribed',
  })
  status: BillingStatus;

  @ApiProperty({ example: 25, description: 'The current plan’s fee for a whole month, in currency units' })
  monthlyFee: number;

  @ApiProperty({ type: Number, nullable: true, example: 50_000, description: 'Emails included a month; null when not limited or billed' })
  includedEmails: number | null;

  @ApiProperty({ type: CurrentPeriodDto })
  currentPeriod: CurrentPeriodDto;

  @ApiProperty({ example: 52_500, description: 'Every email ever metered for the tenant' })
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
      currentPeriod: CurrentPeriodDto.from(period, usage.monthForwards),
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
