import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';
import { SUBSCRIPTION_STATUSES, type BillingSubscription, type SubscriptionStatus } from '../billing-subscription.entity';
import { TenantDto } from './tenant.dto';

const PLAN_DESCRIPTION = 'A plan of the catalog (GET /api/billing/plans; built in: starter, developer, scale).';

export class CreateSubscriptionDto extends TenantDto {
  @ApiProperty({ example: 'starter', description: PLAN_DESCRIPTION })
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  plan: string;
}

export class ChangeSubscriptionDto extends TenantDto {
  @ApiProperty({ example: 'developer', description: `${PLAN_DESCRIPTION} The current plan again changes nothing.` })
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  newPlan: string;
}

/** The spec's subscription object (snake_case as the spec writes it). */
export class SubscriptionDto {
  @ApiProperty({ example: 'subs_2Lm8QvR5tNc1XkW7bZp0Hy' })
  id: string;

  @ApiProperty({ example: 'cus_7Hq2VbN4kLw9sZr1McX0pT' })
  customer_id: string;

  @ApiProperty({ example: 'starter' })
  plan: string;

  @ApiProperty({ enum: SUBSCRIPTION_STATUSES, example: 'active' })
  status: SubscriptionStatus;

  @ApiProperty({ format: 'date-time' })
  created_at: string;

  static from(subscription: BillingSubscription): SubscriptionDto {
    return {
      id: subscription.id,
      customer_id: subscription.customerId,
      plan: subscription.plan,
      status: subscription.status,
      created_at: subscription.createdAt.toISOString(),
    };
  }
}
