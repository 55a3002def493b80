import { Body, Controller, Delete, Get, HttpCode, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import type { IdempotencyClaim } from '../common/idempotency/idempotency.store';
import { IdempotencyClaimOf, Idempotent } from '../common/idempotency/idempotent.decorator';
import { BillingService } from './billing.service';
import { BillingInfoDto, PlanListDto } from './dto/billing-info.dto';
import { CreateCustomerDto, CustomerDto } from './dto/customer.dto';
import { ChangeSubscriptionDto, CreateSubscriptionDto, SubscriptionDto } from './dto/subscription.dto';
import { OptionalTenantDto, tenantIdOf } from './dto/tenant.dto';
import { RecordUsageDto, UsageResponseDto } from './dto/usage.dto';

const TENANT_404 = 'The tenant is unknown, or not the calling key’s account (only operator keys bill other accounts)';
const OPERATOR_ONLY =
  'An operator admin key, or the tenant’s own admin key where the operator turned self-service billing on for the account ' +
  '(PATCH /admin/accounts/{accountId} billingSelfService); otherwise 403 FORBIDDEN.';

@ApiTags('Billing')
@Controller('api/billing')
export class BillingController {
  constructor(private readonly billing: BillingService) {}

  @Get('plans')
  @Auth({ keyTypes: ['admin'], permission: 'billing.read' })
  @ApiOperation({
    summary: 'The plans a subscription may name',
    description: 'The built-in catalog (starter, developer, scale), or the one of BILLING_PLANS_FILE when the operator set it.',
  })
  @ApiOkResponse({ type: PlanListDto })
  plans(): PlanListDto {
    return PlanListDto.from(this.billing.plans());
  }

  @Post('customer')
  @Auth({ keyTypes: ['admin'], permission: 'billing.write' })
  @ApiOperation({
    summary: 'Create the tenant’s billing customer',
    description: 'One per tenant: a second one is 409 CONFLICT (details.customerId names the first).',
  })
  @ApiCreatedResponse({ type: CustomerDto })
  @ApiNotFoundResponse({ description: TENANT_404, type: ErrorBodyDto })
  @ApiConflictResponse({ description: 'The tenant has a customer already', type: ErrorBodyDto })
  async createCustomer(@CurrentAuth() auth: AuthContext, @Body() dto: CreateCustomerDto): Promise<CustomerDto> {
    return CustomerDto.from(await this.billing.createCustomer(auth, dto.tenantId, dto));
  }

  @Post('subscription')
  @Auth({ keyTypes: ['admin'], permission: 'billing.write' })
  @ApiOperation({
    summary: 'Subscribe the tenant to a plan',
    description:
      'Moves a free account to the pro tier (a pro or enterprise account keeps its tier). An unknown plan is 400 listing the plans ' +
      `(details.plans); 409 CONFLICT when the tenant has no customer yet or a subscription is active already. ${OPERATOR_ONLY}`,
  })
  @ApiCreatedResponse({ type: SubscriptionDto })
  @ApiBadRequestResponse({ description: 'Not a plan of the catalog', type: ErrorBodyDto })
  @ApiNotFoundResponse({ description: TENANT_404, type: ErrorBodyDto })
  @ApiConflictResponse({ description: 'No customer yet, or a subscription is active already', type: ErrorBodyDto })
  async subscribe(@CurrentAuth() auth: AuthContext, @Body() dto: CreateSubscriptionDto): Promise<SubscriptionDto> {
    return SubscriptionDto.from(await this.billing.subscribe(auth, dto.tenantId, dto.plan));
  }

  @Patch('subscription/change')
  @Auth({ keyTypes: ['admin'], permission: 'billing.write' })
  @ApiOperation({
    summary: 'Change the active subscription’s plan',
    description:
      'From now on: the month so far is closed under the old plan (its fee pro rata, its overage), the rest of it is the new ' +
      `plan’s (billing info's currentPeriod.lines). The current plan again is a no-op (200). ${OPERATOR_ONLY}`,
  })
  @ApiOkResponse({ type: SubscriptionDto })
  @ApiBadRequestResponse({ description: 'Not a plan of the catalog', type: ErrorBodyDto })
  @ApiNotFoundResponse({ description: `${TENANT_404}; or no active subscription`, type: ErrorBodyDto })
  async change(@CurrentAuth() auth: AuthContext, @Body() dto: ChangeSubscriptionDto): Promise<SubscriptionDto> {
    return SubscriptionDto.from(await this.billing.changePlan(auth, dto.tenantId, dto.newPlan));
  }

  @Delete('subscription')
  @Auth({ keyTypes: ['admin'], permission: 'billing.write' })
  @ApiOperation({
    summary: 'Cancel the active subscription',
    description:
      'At once: the month so far is billed under the plan (its fee pro rata, its overage). The account goes back to the Free ' +
      'tier and quotas if this subscription moved it to pro; a tier the operator ' +
      `set (pro or enterprise) stays. tenantId in the JSON body or the query. ${OPERATOR_ONLY}`,
  })
  @ApiBody({ type: OptionalTenantDto, required: false })
  @ApiOkResponse({ type: SubscriptionDto })
  @ApiNotFoundResponse({ description: `${TENANT_404}; or no active subscription`, type: ErrorBodyDto })
  async cancel(
    @CurrentAuth() auth: AuthContext,
    @Body() body: OptionalTenantDto,
    @Query() query: OptionalTenantDto,
  ): Promise<SubscriptionDto> {
    return SubscriptionDto.from(await this.billing.cancel(auth, tenantIdOf(body, query)));
  }

  @Post('usage')
  @HttpCode(200)
  @Auth({ keyTypes: ['admin'], permission: 'billing.write' })
  @Idempotent()
  @ApiOperation({
    summary: 'Record emails sent outside Mailroom',
    description:
      'Added to the current hour’s usage, never refused by a quota; counts towards the month’s included emails and overage. ' +
      'With an Idempotency-Key it is recorded once: a retry gets the first answer, even after Redis restarted or while it is down.',
  })
  @ApiOkResponse({ type: UsageResponseDto })
  @ApiNotFoundResponse({ description: TENANT_404, type: ErrorBodyDto })
  recordUsage(
    @CurrentAuth() auth: AuthContext,
    @Body() dto: RecordUsageDto,
    @IdempotencyClaimOf() idempotency?: IdempotencyClaim,
  ): Promise<UsageResponseDto> {
    return this.billing.recordUsage(auth, dto.tenantId, dto.emailCount, idempotency);
  }

  @Get('info')
  @Auth({ keyTypes: ['admin'], permission: 'billing.read' })
  @ApiOperation({
    summary: 'The tenant’s plan, fee and current month',
    description:
      'tenantId in the JSON body or the query. The period is the current UTC calendar month, cut into lines at each subscribe, ' +
      'plan change and cancel in it: each line bills its plan’s fee pro rata and its own overage.',
  })
  @ApiBody({ type: OptionalTenantDto, required: false })
  @ApiOkResponse({ type: BillingInfoDto })
  @ApiNotFoundResponse({ description: TENANT_404, type: ErrorBodyDto })
  async info(
    @CurrentAuth() auth: AuthContext,
    @Body() body: OptionalTenantDto,
    @Query() query: OptionalTenantDto,
  ): Promise<BillingInfoDto> {
    return BillingInfoDto.from(await this.billing.info(auth, tenantIdOf(body, query)));
  }
}
