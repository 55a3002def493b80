import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import type { BillingSummary } from '../billing-summary';
import { TenantDto } from './tenant.dto';

export const MAX_REPORTED_EMAILS = 10_000_000;

export class RecordUsageDto extends TenantDto {
  @ApiProperty({
    example: 250,
    minimum: 1,
    maximum: MAX_REPORTED_EMAILS,
    description: 'Emails sent outside Mailroom, added to the current hour.',
  })
  @IsInt()
  @Min(1)
  @Max(MAX_REPORTED_EMAILS)
  emailCount: number;
}

/** The spec's usage response. */
export class UsageResponseDto {
  @ApiProperty({ example: 250, description: 'The emailCount just recorded' })
  emailsRecorded: number;

  @ApiProperty({ example: 10_250, description: 'Emails of the current UTC calendar month, this record included' })
  currentPeriodEmails: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 10_000,
    description: 'Emails the plan includes a month; null when not limited or billed',
  })
  includedEmails: number | null;

  @ApiProperty({
    example: 250,
    description:
      'Emails of the month sent beyond the included emails of the plan active then (currentPeriod.overage of GET /api/billing/info); ' +
      'without a plan change in the month max(0, currentPeriodEmails − includedEmails)',
  })
  overage: number;

  @ApiProperty({ example: 'starter', description: 'The subscribed plan, else free (or the tier the operator granted: pro, enterprise)' })
  plan: string;

  @ApiProperty({
    example: 1_340,
    description:
      'Forwarded emails of the current UTC calendar month (one per destination): counted against forwards_per_month, not in currentPeriodEmails, not billed',
  })
  currentPeriodForwards: number;

  static from(emailsRecorded: number, { terms, period, usage }: BillingSummary): UsageResponseDto {
    return {
      emailsRecorded,
      currentPeriodEmails: period.emailsSent,
      includedEmails: terms.includedEmails,
      overage: period.overage,
      plan: terms.plan,
      currentPeriodForwards: usage.monthForwards,
    };
  }
}
