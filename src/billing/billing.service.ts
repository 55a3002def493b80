import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Not, Repository } from 'typeorm';
import { Account } from '../accounts/account.entity';
import { billingSelfService } from '../accounts/account-settings';
import { ApiKeyCache } from '../auth/api-key.cache';
import type { AuthContext } from '../auth/auth-context';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { uniqueViolation } from '../common/errors/unique-violation';
import { type IdempotencyClaim, IdempotencyStore } from '../common/idempotency/idempotency.store';
import { newId } from '../common/ids';
import { AccountUsageRepository } from '../quotas/account-usage.repository';
import { QuotaService } from '../quotas/quota.service';
import { BillingCustomer } from './billing-customer.entity';
import { BillingSubscription } from './billing-subscription.entity';
import type { BillingSummary } from './billing-summary';
import { billingPeriodOf } from './billing-period';
import { termsOf } from './billing-terms';
import { UsageResponseDto } from './dto/usage.dto';
import { PlanChangeRepository } from './plan-change.repository';
import { PlanCatalog } from './plans';

/** Who calls: billing reads only the account and whether it is the operator's. */
export type BillingCaller = Pick<AuthContext, 'accountId' | 'isOperator'>;

/**
 * Customers, subscriptions and usage of tenants (D-32). A tenant is an account: an admin key bills its own
 * account, an operator admin key any account; every other tenant id is answered 404 like an unknown one
 * (D-1). A subscription moves a free account to pro (D-11) in the same transaction, and only that
 * subscription's cancellation moves it back. Subscribing, changing the plan and cancelling are the operator's
 * unless the operator turned self-service billing on for the account: a tenant cannot raise its own limits.
 */
@Injectable()
export class BillingService implements OnApplicationBootstrap {
  private readonly logger = new Logger(BillingService.name);

  constructor(
    private readonly dataSource: DataSource,
    @InjectRepository(BillingCustomer) private readonly customers: Repository<BillingCustomer>,
    @InjectRepository(BillingSubscription) private readonly subscriptions: Repository<BillingSubscription>,
    private readonly catalog: PlanCatalog,
    private readonly quotas: QuotaService,
    private readonly usage: AccountUsageRepository,
    private readonly keyCache: ApiKeyCache,
    private readonly planChanges: PlanChangeRepository,
    private readonly idempotency: IdempotencyStore,
  ) {}

  /** A plans file that dropped a plan still subscribed to leaves those subscriptions unbilled: say so at start. */
  async onApplicationBootstrap(): Promise<void> {
    try {
      const rows: { plan: string; n: number }[] = await this.dataSource.query(
        `SELECT plan, count(*)::int AS n FROM billing_subscriptions WHERE status = 'active' GROUP BY plan`,
      );
      for (const { plan, n } of rows.filter((row) => !this.catalog.get(row.plan))) {
        this.logger.warn(`${n} active subscription(s) name the plan ${plan}, which the plan catalog no longer has: they are not billed`);
      }
    } catch (err) {
      this.logger.warn(`Could not check the active subscriptions' plans: ${(err as Error).message}`);
    }
  }

  plans(): PlanCatalog {
    return this.catalog;
  }

  /** The tenant's customer; a second one for the same tenant is 409. */
  async createCustomer(caller: BillingCaller, tenantId: string, input: { email: string; name: string }): Promise<BillingCustomer> {
    const account = await this.tenant(caller, tenantId);
    const customer = this.customers.create({ id: newId('cus'), accountId: account.id, email: input.email, name: input.name.trim() });
    try {
      await this.customers.insert(customer);
    } catch (err) {
      if (uniqueViolation(err) !== 'UQ_billing_customers_account') throw err;
      const existing = await this.customers.findOneBy({ accountId: account.id });
      throw new AppException(ErrorCode.Conflict, `Tenant ${tenantId} has a billing customer already`, { customerId: existing?.id });
    }
    return this.customers.findOneByOrFail({ id: customer.id, accountId: account.id });
  }

  /**
   * Subscribes the tenant's customer to a plan and moves a free account to the pro tier, in one transaction.
   * 403 for the tenant's own keys without self-service; 409 without a customer, or when a subscription is
   * active already (also when two creations race: the partial unique index lets one through).
   */
  async subscribe(caller: BillingCaller, tenantId: string, planName: string): Promise<BillingSubscription> {
    this.requirePlan('plan', planName);
    const account = await this.tenant(caller, tenantId);
    this.requireSubscriptionRights(caller, account, 'subscribes this account to a plan');
    let result: { subscription: BillingSubscription; tierChanged: boolean };
    try {
      result = await this.dataSource.transaction(async (manager) => {
        const customer = await manager.findOneBy(BillingCustomer, { accountId: account.id });
        if (!customer) {
          throw new AppException(
            ErrorCode.Conflict,
            `Tenant ${tenantId} has no billing customer: create it with POST /api/billing/customer first`,
          );
        }
        const id = newId('subs');
        const tierChanged = await this.raiseTier(manager, account.id);
        await manager.insert(BillingSubscription, {
          id,
          accountId: account.id,
          customerId: customer.id,
          plan: planName,
          status: 'active',
          canceledAt: null,
          raisedTier: tierChanged,
        });
        await this.planChanges.record(manager, {
          accountId: account.id,
          subscriptionId: id,
          plan: planName,
          tierBefore: tierChanged ? 'free' : null,
        });
        return { subscription: await manager.findOneByOrFail(BillingSubscription, { id, accountId: account.id }), tierChanged };
      });
    } catch (err) {
      if (uniqueViolation(err) !== 'UQ_billing_subscriptions_active') throw err;
      const active = await this.subscriptions.findOneBy({ accountId: account.id, status: 'active' });
      throw new AppException(
        ErrorCode.Conflict,
        `Tenant ${tenantId} has an active subscription already: change its plan with PATCH /api/billing/subscription/change`,
        { subscriptionId: active?.id },
      );
    }
    await this.accountChanged(account.id, result.tierChanged);
    return result.subscription;
  }

  /**
   * Moves the active subscription to another plan from now on; the same plan changes nothing. 403 for the
   * tenant's own keys without self-service; 404 without an active subscription.
   */
  async changePlan(caller: BillingCaller, tenantId: string, newPlan: string): Promise<BillingSubscription> {
    this.requirePlan('newPlan', newPlan);
    const account = await this.tenant(caller, tenantId);
    this.requireSubscriptionRights(caller, account, 'changes the plan of this account');
    const { subscription, changed } = await this.dataSource.transaction(async (manager) => {
      const active = await this.lockActive(manager, account.id, tenantId);
      if (active.plan === newPlan) return { subscription: active, changed: false };
      await manager.update(BillingSubscription, { id: active.id, accountId: account.id }, { plan: newPlan });
      await this.planChanges.record(manager, { accountId: account.id, subscriptionId: active.id, plan: newPlan, tierBefore: null });
      return { subscription: await manager.findOneByOrFail(BillingSubscription, { id: active.id, accountId: account.id }), changed: true };
    });
    if (changed) await this.accountChanged(account.id, false);
    return subscription;
  }

  /**
   * Cancels the active subscription at once; the account goes back to free only if this subscription made it
   * pro (a tier the operator set stays). 403 for the tenant's own keys without self-service; 404 without one.
   */
  async cancel(caller: BillingCaller, tenantId: string): Promise<BillingSubscription> {
    const account = await this.tenant(caller, tenantId);
    this.requireSubscriptionRights(caller, account, 'cancels the subscription of this account');
    const { subscription, tierChanged } = await this.dataSource.transaction(async (manager) => {
      const active = await this.lockActive(manager, account.id, tenantId);
      await manager.update(
        BillingSubscription,
        { id: active.id, accountId: account.id },
        { status: 'canceled', canceledAt: () => 'now()' },
      );
      const tierChanged = active.raisedTier ? await this.lowerTier(manager, account.id) : false;
      await this.planChanges.record(manager, {
        accountId: account.id,
        subscriptionId: active.id,
        plan: null,
        tierBefore: tierChanged ? 'pro' : null,
      });
      return { subscription: await manager.findOneByOrFail(BillingSubscription, { id: active.id, accountId: account.id }), tierChanged };
    });
    await this.accountChanged(account.id, tierChanged);
    return subscription;
  }

  /**
   * Records emails sent elsewhere (never refused: it already happened) and answers the month so far. The usage
   * and the Idempotency-Key's answer commit in one transaction (D-17): a key used already rolls it back and the
   * first answer is replayed, so a retry counts once whatever Redis remembers.
   */
  async recordUsage(
    caller: BillingCaller,
    tenantId: string,
    emailCount: number,
    idempotency?: IdempotencyClaim,
  ): Promise<UsageResponseDto> {
    const account = await this.tenant(caller, tenantId);
    const answer = await this.idempotency.guard(idempotency, () =>
      this.quotas.recordReported(account.id, emailCount, () =>
        this.dataSource.transaction(async (manager) => {
          await this.usage.addEmails(account.id, emailCount, manager);
          const recorded = UsageResponseDto.from(emailCount, await this.summaryOf(account, new Date(), manager));
          if (idempotency) await this.idempotency.record({ claim: idempotency, statusCode: 200, body: recorded }, manager);
          return recorded;
        }),
      ),
    );
    if (idempotency) idempotency.recorded = true;
    return answer;
  }

  /** The tenant's plan, fee and the current UTC calendar month: its parts under each plan, emails, overage and cost. */
  async info(caller: BillingCaller, tenantId: string, now = new Date()): Promise<BillingSummary> {
    return this.summaryOf(await this.tenant(caller, tenantId), now);
  }

  /** `manager`: read the usage in that transaction (its own writes included). */
  private async summaryOf(account: Account, now: Date, manager?: EntityManager): Promise<BillingSummary> {
    const [customer, subscription, usage, changes] = await Promise.all([
      this.customers.findOneBy({ accountId: account.id }),
      this.latestSubscription(account.id),
      this.usage.emailTotals(account.id, now.getTime(), manager),
      this.planChanges.ofMonth(account.id, now.getTime(), manager),
    ]);
    const terms = termsOf({ tier: account.tier, accountCreatedAt: account.createdAt, subscription, catalog: this.catalog, now });
    const period = billingPeriodOf({
      now,
      current: terms,
      accountCreatedAt: account.createdAt,
      catalog: this.catalog,
      changes,
      hours: usage.monthHours,
    });
    return { account, customer, terms, period, usage };
  }

  /** The active subscription, else the latest canceled one, else null. */
  private async latestSubscription(accountId: string): Promise<BillingSubscription | null> {
    const active = await this.subscriptions.findOneBy({ accountId, status: 'active' });
    if (active) return active;
    return this.subscriptions.findOne({ where: { accountId, status: Not('active') }, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  /**
   * The account `tenantId` names, if the caller may bill it: its own, or any with an operator key. A
   * foreign id is answered exactly like an unknown one, without a query.
   */
  private async tenant(caller: BillingCaller, tenantId: string): Promise<Account> {
    const mayBill = tenantId === caller.accountId || caller.isOperator;
    const account = mayBill ? await this.dataSource.getRepository(Account).findOneBy({ id: tenantId }) : null;
    if (!account) throw AppException.notFound('Tenant', tenantId);
    return account;
  }

  /**
   * The plan decides the account's limits and what the operator bills: an operator key's matter, or the
   * tenant's where the operator turned self-service billing on (D-11).
   */
  private requireSubscriptionRights(caller: BillingCaller, account: Account, action: string): void {
    if (caller.isOperator || billingSelfService(account.settings)) return;
    throw new AppException(
      ErrorCode.Forbidden,
      `Only the operator ${action}: ask the operator of this Mailroom to do it, or to turn on self-service billing for the account`,
    );
  }

  private requirePlan(field: string, name: string): void {
    if (this.catalog.get(name)) return;
    const plans = this.catalog.names;
    const message = `${field} must be one of the following values: ${plans.join(', ')}`;
    throw new AppException(ErrorCode.ValidationFailed, `Request validation failed: ${field}: ${message}`, {
      fields: [{ field, message }],
      plans,
    });
  }

  private async lockActive(manager: EntityManager, accountId: string, tenantId: string): Promise<BillingSubscription> {
    const active = await manager.findOne(BillingSubscription, {
      where: { accountId, status: 'active' },
      lock: { mode: 'pessimistic_write' },
    });
    if (!active) throw new AppException(ErrorCode.NotFound, `Tenant ${tenantId} has no active subscription`);
    return active;
  }

  /** free → pro; a pro or enterprise account keeps its tier. True if it moved. */
  private raiseTier(manager: EntityManager, accountId: string): Promise<boolean> {
    return this.moveTier(manager, accountId, 'free', 'pro');
  }

  /** pro → free; an account the operator made enterprise meanwhile keeps its tier. True if it moved. */
  private lowerTier(manager: EntityManager, accountId: string): Promise<boolean> {
    return this.moveTier(manager, accountId, 'pro', 'free');
  }

  private async moveTier(manager: EntityManager, accountId: string, from: 'free' | 'pro', to: 'free' | 'pro'): Promise<boolean> {
    const result = await manager
      .createQueryBuilder()
      .update(Account)
      .set({ tier: to })
      .where('id = :accountId AND tier = :from', { accountId, from })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** After the commit: rate limits read the tier through the key cache, quotas through their own. */
  private async accountChanged(accountId: string, tierChanged: boolean): Promise<void> {
    if (tierChanged) await this.keyCache.invalidate('*');
    this.quotas.accountChanged(accountId);
  }
}
