import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

// Billing (D-32): customers, subscriptions that move the account's tier (D-11), reported and metered usage,
// and billing info with overage; a tenant is an account, and only operator keys bill other accounts. A tenant's
// own keys subscribe, change the plan and cancel only where the operator turned self-service billing on.
describe('billing', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let db: DataSource;

  beforeAll(async () => {
    sink = await startSmtpSink({ parse: false });
    t = await createTestApp({ env: { SMTP_URL: sink.url } });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const anyTime = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  /** currentPeriod's parts of the month under each plan (test/e2e/billing-periods.e2e-spec.ts checks them). */
  const periodParts = { start: anyTime, end: anyTime, fees: expect.any(Number), amountDue: expect.any(Number), lines: expect.any(Array) };
  const post = (key: string, path: string, body: object) => t.http.post(`/api/billing/${path}`).set(bearer(key)).send(body);
  const info = (key: string, tenantId: string) => t.http.get('/api/billing/info').set(bearer(key)).query({ tenantId });
  const whoamiPlan = async (key: string) => (await t.http.get('/auth/whoami').set(bearer(key)).expect(200)).body.plan;
  const tierOf = async (accountId: string) => (await db.query('SELECT tier FROM accounts WHERE id = $1', [accountId]))[0].tier;
  const accountCreatedAt = async (accountId: string) =>
    ((await db.query('SELECT created_at FROM accounts WHERE id = $1', [accountId]))[0].created_at as Date).toISOString();
  const customerFor = async (key: string, tenantId: string) =>
    (await post(key, 'customer', { tenantId, email: 'billing@acme.example', name: 'Acme Ltd' }).expect(201)).body;
  /** The operator lets the tenant's own admin keys manage its subscription. */
  const selfService = async (accountId: string, on = true) =>
    (await t.http.patch(`/admin/accounts/${accountId}`).set(bearer(t.operatorKey)).send({ billingSelfService: on }).expect(200)).body;
  const notFound = (tenantId: string) => ({
    error: { code: 'NOT_FOUND', message: `Tenant '${tenantId}' was not found` },
    documentation: expect.any(String),
  });

  it('lists the built-in plans of D-32', async () => {
    const { adminKey } = await createAccount(t, 'Catalog');
    const res = await t.http.get('/api/billing/plans').set(bearer(adminKey)).expect(200);
    expect(res.body).toEqual({
      plans: [
        { name: 'starter', monthlyFee: 10, includedEmails: 10_000, overagePer1000: 1 },
        { name: 'developer', monthlyFee: 25, includedEmails: 50_000, overagePer1000: 1 },
        { name: 'scale', monthlyFee: 90, includedEmails: 250_000, overagePer1000: 1 },
      ],
    });
  });

  it('runs a tenant through Free, a subscription with metered and reported usage, a plan change and a cancel', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Lifecycle');
    await selfService(accountId);
    const domain = 'lifecycle.billing.test';
    await createVerifiedDomain(t, accountId, domain);

    // Free, never subscribed: the D-13 quota of an account created this month (360), no fee.
    expect((await info(adminKey, accountId).expect(200)).body).toEqual({
      tenantId: accountId,
      plan: 'free',
      status: 'none',
      monthlyFee: 0,
      includedEmails: 360,
      currentPeriod: {
        ...periodParts,
        emailsSent: 0,
        emailsIncluded: 360,
        overage: 0,
        overageCost: 0,
        forwardsSent: 0,
        fees: 0,
        amountDue: 0,
        lines: [expect.objectContaining({ plan: 'free', fee: 0, emailsSent: 0, emailsIncluded: 360 })],
      },
      totalEmailsSent: 0,
      createdAt: await accountCreatedAt(accountId),
      lastEmailSent: null,
    });

    const customer = await customerFor(adminKey, accountId);
    expect(customer).toEqual({
      id: expect.stringMatching(/^cus_[0-9A-Za-z]{22}$/),
      email: 'billing@acme.example',
      name: 'Acme Ltd',
      created_at: anyTime,
    });
    const again = await post(adminKey, 'customer', { tenantId: accountId, email: 'other@acme.example', name: 'Other' }).expect(409);
    expect(again.body.error).toEqual({
      code: 'CONFLICT',
      message: `Tenant ${accountId} has a billing customer already`,
      details: { customerId: customer.id },
    });

    const unknownPlan = await post(adminKey, 'subscription', { tenantId: accountId, plan: 'gold' }).expect(400);
    expect(unknownPlan.body.error).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'Request validation failed: plan: plan must be one of the following values: starter, developer, scale',
      details: {
        fields: [{ field: 'plan', message: 'plan must be one of the following values: starter, developer, scale' }],
        plans: ['starter', 'developer', 'scale'],
      },
    });
    expect(await whoamiPlan(adminKey)).toBe('free');

    const created = await post(adminKey, 'subscription', { tenantId: accountId, plan: 'starter' }).expect(201);
    const subscription = created.body;
    expect(subscription).toEqual({
      id: expect.stringMatching(/^subs_[0-9A-Za-z]{22}$/),
      customer_id: customer.id,
      plan: 'starter',
      status: 'active',
      created_at: anyTime,
    });
    expect(await tierOf(accountId)).toBe('pro');
    expect(await whoamiPlan(adminKey)).toBe('pro'); // at once: the key cache was dropped
    const second = await post(adminKey, 'subscription', { tenantId: accountId, plan: 'scale' }).expect(409);
    expect(second.body.error).toMatchObject({ code: 'CONFLICT', details: { subscriptionId: subscription.id } });

    const changed = await t.http
      .patch('/api/billing/subscription/change')
      .set(bearer(adminKey))
      .send({ tenantId: accountId, newPlan: 'developer' })
      .expect(200);
    expect(changed.body).toEqual({ ...subscription, plan: 'developer' });
    const same = await t.http
      .patch('/api/billing/subscription/change')
      .set(bearer(adminKey))
      .send({ tenantId: accountId, newPlan: 'developer' })
      .expect(200);
    expect(same.body).toEqual(changed.body);
    const badChange = await t.http
      .patch('/api/billing/subscription/change')
      .set(bearer(adminKey))
      .send({ tenantId: accountId, newPlan: 'gold' })
      .expect(400);
    expect(badChange.body.error.details.fields).toEqual([
      { field: 'newPlan', message: 'newPlan must be one of the following values: starter, developer, scale' },
    ]);
    expect(await whoamiPlan(adminKey)).toBe('pro');

    // Three accepted recipients are metered as they are accepted, with quotas off (QUOTAS_ENABLED=false here).
    const send = (to: string[]) =>
      t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({ from: `hello@${domain}`, to, subject: 'Hi', text: 'Hello' })
        .expect(200);
    await send(['ada@example.org', 'bob@example.org']);
    await send(['cy@example.org']);
    // A month that is over: in the total, not in the current period.
    await db.query(
      `INSERT INTO account_usage_hourly (account_id, hour, emails, submissions) VALUES ($1, date_trunc('month', now(), 'UTC') - interval '40 days', 1000, 0)`,
      [accountId],
    );

    const reported = await post(adminKey, 'usage', { tenantId: accountId, emailCount: 10 }).expect(200);
    expect(reported.body).toEqual({
      emailsRecorded: 10,
      currentPeriodEmails: 13,
      includedEmails: 50_000,
      overage: 0,
      plan: 'developer',
      currentPeriodForwards: 0,
    });

    const before = (await info(adminKey, accountId).expect(200)).body;
    expect(before).toEqual({
      tenantId: accountId,
      plan: 'developer',
      status: 'active',
      monthlyFee: 25,
      includedEmails: 50_000,
      currentPeriod: { ...periodParts, emailsSent: 13, emailsIncluded: 50_000, overage: 0, overageCost: 0, forwardsSent: 0 },
      totalEmailsSent: 1013,
      createdAt: customer.created_at,
      lastEmailSent: anyTime,
    });
    expect(Date.now() - Date.parse(before.lastEmailSent)).toBeLessThan(60_000);

    // Past the included emails: 51,500 in the month, 1,500 over at 1.00 per 1,000.
    const over = await post(adminKey, 'usage', { tenantId: accountId, emailCount: 51_487 }).expect(200);
    expect(over.body).toEqual({
      emailsRecorded: 51_487,
      currentPeriodEmails: 51_500,
      includedEmails: 50_000,
      overage: 1500,
      plan: 'developer',
      currentPeriodForwards: 0,
    });
    const billed = (await info(adminKey, accountId).expect(200)).body;
    expect(billed.currentPeriod).toEqual({
      ...periodParts,
      emailsSent: 51_500,
      emailsIncluded: 50_000,
      overage: 1500,
      overageCost: 1.5,
      forwardsSent: 0,
    });
    expect(billed.totalEmailsSent).toBe(52_500);

    // Canceled at once: back on Free (its quota), usage of the month kept, and billed under the plans it had: the
    // 1,500 emails over developer's 50,000 stay.
    const canceled = await t.http.delete('/api/billing/subscription').set(bearer(adminKey)).send({ tenantId: accountId }).expect(200);
    expect(canceled.body).toEqual({ ...subscription, plan: 'developer', status: 'canceled' });
    expect(await tierOf(accountId)).toBe('free');
    expect(await whoamiPlan(adminKey)).toBe('free');
    const afterCancel = (await info(adminKey, accountId).expect(200)).body;
    expect(afterCancel).toEqual({
      ...billed,
      plan: 'free',
      status: 'canceled',
      monthlyFee: 0,
      includedEmails: 360,
      currentPeriod: { ...periodParts, emailsSent: 51_500, emailsIncluded: 360, overage: 1500, overageCost: 1.5, forwardsSent: 0 },
    });
    expect(afterCancel.currentPeriod.lines.map((line: { plan: string; emailsSent: number }) => [line.plan, line.emailsSent])).toEqual([
      ['free', 0],
      ['starter', 0],
      ['developer', 51_500],
      ['free', 0],
    ]);
    const none = await t.http.delete('/api/billing/subscription').set(bearer(adminKey)).query({ tenantId: accountId }).expect(404);
    expect(none.body.error).toEqual({ code: 'NOT_FOUND', message: `Tenant ${accountId} has no active subscription` });
    await t.http
      .patch('/api/billing/subscription/change')
      .set(bearer(adminKey))
      .send({ tenantId: accountId, newPlan: 'scale' })
      .expect(404);

    // A new subscription after a cancel is a new one.
    const renewed = await post(adminKey, 'subscription', { tenantId: accountId, plan: 'scale' }).expect(201);
    expect(renewed.body).toEqual({
      id: expect.stringMatching(/^subs_/),
      customer_id: customer.id,
      plan: 'scale',
      status: 'active',
      created_at: anyTime,
    });
    expect(renewed.body.id).not.toBe(subscription.id);
    expect(await whoamiPlan(adminKey)).toBe('pro');
  });

  it('needs a customer before a subscription', async () => {
    const { accountId } = await createAccount(t, 'No customer');
    const res = await post(t.operatorKey, 'subscription', { tenantId: accountId, plan: 'starter' }).expect(409);
    expect(res.body.error).toEqual({
      code: 'CONFLICT',
      message: `Tenant ${accountId} has no billing customer: create it with POST /api/billing/customer first`,
    });
    expect(await tierOf(accountId)).toBe('free');
  });

  it('reads the tenant of GET info and DELETE subscription from the JSON body or the query', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Body or query');
    await selfService(accountId);
    const fromBody = await t.http.get('/api/billing/info').set(bearer(adminKey)).send({ tenantId: accountId }).expect(200);
    const fromQuery = await info(adminKey, accountId).expect(200);
    expect(fromBody.body).toEqual(fromQuery.body);
    expect(fromBody.body).toMatchObject({ tenantId: accountId, plan: 'free' });

    const neither = await t.http.get('/api/billing/info').set(bearer(adminKey)).expect(400);
    expect(neither.body.error.details.fields).toEqual([
      { field: 'tenantId', message: 'tenantId is required, in the JSON body or the query' },
    ]);
    const both = await t.http
      .get('/api/billing/info')
      .set(bearer(adminKey))
      .query({ tenantId: 'acc_other' })
      .send({ tenantId: accountId })
      .expect(400);
    expect(both.body.error.details.fields).toEqual([{ field: 'tenantId', message: 'the body and the query name different tenants' }]);

    await customerFor(adminKey, accountId);
    await post(adminKey, 'subscription', { tenantId: accountId, plan: 'starter' }).expect(201);
    const canceled = await t.http.delete('/api/billing/subscription').set(bearer(adminKey)).query({ tenantId: accountId }).expect(200);
    expect(canceled.body.status).toBe('canceled');
  });

  it("answers another account's tenant id 404 like an unknown one on every endpoint, and changes nothing", async () => {
    const victim = await createAccount(t, 'Victim');
    await selfService(victim.accountId);
    const customer = await customerFor(victim.adminKey, victim.accountId);
    const subscription = (await post(victim.adminKey, 'subscription', { tenantId: victim.accountId, plan: 'starter' }).expect(201)).body;
    await post(victim.adminKey, 'usage', { tenantId: victim.accountId, emailCount: 7 }).expect(200);
    const victimInfo = (await info(victim.adminKey, victim.accountId).expect(200)).body;

    const { adminKey: intruder } = await createAccount(t, 'Intruder');
    for (const tenantId of [victim.accountId, 'acc_doesnotexist0000000000']) {
      const calls = [
        post(intruder, 'customer', { tenantId, email: 'x@evil.example', name: 'X' }),
        post(intruder, 'subscription', { tenantId, plan: 'scale' }),
        t.http.patch('/api/billing/subscription/change').set(bearer(intruder)).send({ tenantId, newPlan: 'scale' }),
        t.http.delete('/api/billing/subscription').set(bearer(intruder)).send({ tenantId }),
        t.http.delete('/api/billing/subscription').set(bearer(intruder)).query({ tenantId }),
        post(intruder, 'usage', { tenantId, emailCount: 1000 }),
        info(intruder, tenantId),
        t.http.get('/api/billing/info').set(bearer(intruder)).send({ tenantId }),
      ];
      for (const res of await Promise.all(calls)) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(notFound(tenantId));
      }
    }

    expect((await info(victim.adminKey, victim.accountId).expect(200)).body).toEqual(victimInfo);
    const rows = await db.query('SELECT id, plan, status FROM billing_subscriptions WHERE account_id = $1', [victim.accountId]);
    expect(rows).toEqual([{ id: subscription.id, plan: 'starter', status: 'active' }]);
    const customers = await db.query('SELECT id, email FROM billing_customers WHERE account_id = $1', [victim.accountId]);
    expect(customers).toEqual([{ id: customer.id, email: 'billing@acme.example' }]);
    expect(await tierOf(victim.accountId)).toBe('pro');
  });

  it('lets an operator admin key bill any existing account; enterprise stays enterprise', async () => {
    const tenant = await createAccount(t, 'Billed by the operator');
    const customer = await customerFor(t.operatorKey, tenant.accountId);
    const created = await post(t.operatorKey, 'subscription', { tenantId: tenant.accountId, plan: 'scale' }).expect(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      customer_id: customer.id,
      plan: 'scale',
      status: 'active',
      created_at: anyTime,
    });
    expect(await whoamiPlan(tenant.adminKey)).toBe('pro');
    const usage = await post(t.operatorKey, 'usage', { tenantId: tenant.accountId, emailCount: 5 }).expect(200);
    expect(usage.body).toEqual({
      emailsRecorded: 5,
      currentPeriodEmails: 5,
      includedEmails: 250_000,
      overage: 0,
      plan: 'scale',
      currentPeriodForwards: 0,
    });
    expect((await info(t.operatorKey, tenant.accountId).expect(200)).body).toMatchObject({
      tenantId: tenant.accountId,
      plan: 'scale',
      monthlyFee: 90,
    });
    expect((await info(tenant.adminKey, tenant.accountId).expect(200)).body).toMatchObject({
      plan: 'scale',
      currentPeriod: { emailsSent: 5 },
    });
    await t.http.delete('/api/billing/subscription').set(bearer(t.operatorKey)).send({ tenantId: tenant.accountId }).expect(200);
    expect(await whoamiPlan(tenant.adminKey)).toBe('free');

    const unknown = await info(t.operatorKey, 'acc_doesnotexist0000000000').expect(404);
    expect(unknown.body).toEqual(notFound('acc_doesnotexist0000000000'));

    // The operator account is enterprise: a subscription bills it but leaves its tier alone.
    const operatorId = (await t.http.get('/auth/whoami').set(bearer(t.operatorKey)).expect(200)).body.accountId;
    expect((await info(t.operatorKey, operatorId).expect(200)).body).toMatchObject({
      plan: 'enterprise',
      status: 'none',
      monthlyFee: 0,
      includedEmails: null,
    });
    await customerFor(t.operatorKey, operatorId);
    await post(t.operatorKey, 'subscription', { tenantId: operatorId, plan: 'starter' }).expect(201);
    expect(await whoamiPlan(t.operatorKey)).toBe('enterprise');
    expect((await info(t.operatorKey, operatorId).expect(200)).body).toMatchObject({
      plan: 'starter',
      status: 'active',
      monthlyFee: 10,
      includedEmails: 10_000,
    });
    await t.http.delete('/api/billing/subscription').set(bearer(t.operatorKey)).send({ tenantId: operatorId }).expect(200);
    expect(await tierOf(operatorId)).toBe('enterprise');
  });

  it('keeps subscribing, plan changes and cancelling with the operator unless it turned self-service on', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Operator-managed');
    const askTheOperator = (action: string) => ({
      error: {
        code: 'FORBIDDEN',
        message: `Only the operator ${action}: ask the operator of this Mailroom to do it, or to turn on self-service billing for the account`,
      },
      documentation: 'http://mailroom.test/docs#errors',
    });
    // Reading and the customer record (invoice contact, raises nothing) stay the tenant's.
    await t.http.get('/api/billing/plans').set(bearer(adminKey)).expect(200);
    expect((await info(adminKey, accountId).expect(200)).body).toMatchObject({ plan: 'free', status: 'none' });
    const customer = await customerFor(adminKey, accountId);

    const refused = await post(adminKey, 'subscription', { tenantId: accountId, plan: 'scale' }).expect(403);
    expect(refused.body).toEqual(askTheOperator('subscribes this account to a plan'));
    expect(await tierOf(accountId)).toBe('free');
    expect(await whoamiPlan(adminKey)).toBe('free');
    expect(await db.query('SELECT 1 FROM billing_subscriptions WHERE account_id = $1', [accountId])).toEqual([]);

    // The operator subscribes the tenant: pro at once; the tenant reads it but cannot change or cancel it.
    const subscription = (await post(t.operatorKey, 'subscription', { tenantId: accountId, plan: 'starter' }).expect(201)).body;
    expect(subscription).toMatchObject({ customer_id: customer.id, plan: 'starter', status: 'active' });
    expect(await whoamiPlan(adminKey)).toBe('pro');
    const change = () =>
      t.http.patch('/api/billing/subscription/change').set(bearer(adminKey)).send({ tenantId: accountId, newPlan: 'scale' });
    const cancel = () => t.http.delete('/api/billing/subscription').set(bearer(adminKey)).query({ tenantId: accountId });
    expect((await change().expect(403)).body).toEqual(askTheOperator('changes the plan of this account'));
    expect((await cancel().expect(403)).body).toEqual(askTheOperator('cancels the subscription of this account'));
    expect((await info(adminKey, accountId).expect(200)).body).toMatchObject({ plan: 'starter', status: 'active', monthlyFee: 10 });
    expect(await whoamiPlan(adminKey)).toBe('pro');

    // Self-service on: the tenant manages its own subscription.
    expect(await selfService(accountId)).toMatchObject({ id: accountId, tier: 'pro', billingSelfService: true });
    expect((await change().expect(200)).body).toEqual({ ...subscription, plan: 'scale' });
    expect((await cancel().expect(200)).body.status).toBe('canceled');
    expect(await whoamiPlan(adminKey)).toBe('free');
    await post(adminKey, 'subscription', { tenantId: accountId, plan: 'developer' }).expect(201);
    expect(await whoamiPlan(adminKey)).toBe('pro');

    // And off again.
    expect((await selfService(accountId, false)).billingSelfService).toBe(false);
    await cancel().expect(403);
    expect(await whoamiPlan(adminKey)).toBe('pro');
  });

  it('moves an account back to free on cancel only if the subscription made it pro, never a tier the operator set', async () => {
    const setTier = (accountId: string, tier: string) =>
      t.http.patch(`/admin/accounts/${accountId}`).set(bearer(t.operatorKey)).send({ tier }).expect(200);
    const subscribe = async (accountId: string) => {
      await customerFor(t.operatorKey, accountId);
      await post(t.operatorKey, 'subscription', { tenantId: accountId, plan: 'starter' }).expect(201);
    };
    const cancel = (accountId: string) =>
      t.http.delete('/api/billing/subscription').set(bearer(t.operatorKey)).send({ tenantId: accountId }).expect(200);

    // Pro by hand first, then a subscription: cancelling it leaves the operator's pro.
    const byHand = await createAccount(t, 'Pro by hand');
    await setTier(byHand.accountId, 'pro');
    await subscribe(byHand.accountId);
    await cancel(byHand.accountId);
    expect(await tierOf(byHand.accountId)).toBe('pro');
    expect(await whoamiPlan(byHand.adminKey)).toBe('pro');

    // Pro by the subscription, then set by hand: the operator's choice from then on.
    const confirmed = await createAccount(t, 'Pro confirmed by hand');
    await subscribe(confirmed.accountId);
    expect(await tierOf(confirmed.accountId)).toBe('pro');
    await setTier(confirmed.accountId, 'pro');
    await cancel(confirmed.accountId);
    expect(await whoamiPlan(confirmed.adminKey)).toBe('pro');

    // Made enterprise while subscribed: stays enterprise.
    const upgraded = await createAccount(t, 'Enterprise meanwhile');
    await subscribe(upgraded.accountId);
    await setTier(upgraded.accountId, 'enterprise');
    await cancel(upgraded.accountId);
    expect(await whoamiPlan(upgraded.adminKey)).toBe('enterprise');

    // Pro by the subscription alone: back to free.
    const subscribed = await createAccount(t, 'Pro by subscription');
    await subscribe(subscribed.accountId);
    await cancel(subscribed.accountId);
    expect(await whoamiPlan(subscribed.adminKey)).toBe('free');
  });

  it('refuses usage keys and admin keys without the billing permissions', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Keys');
    const { key: usageKey } = await createKey(t, adminKey, { keyType: 'usage' });
    const { key: readOnly } = await createKey(t, adminKey, { keyType: 'admin', permissions: ['billing.read'] });
    const calls = (key: string) => [
      t.http.get('/api/billing/plans').set(bearer(key)),
      post(key, 'customer', { tenantId: accountId, email: 'a@b.example', name: 'A' }),
      post(key, 'subscription', { tenantId: accountId, plan: 'starter' }),
      t.http.patch('/api/billing/subscription/change').set(bearer(key)).send({ tenantId: accountId, newPlan: 'scale' }),
      t.http.delete('/api/billing/subscription').set(bearer(key)).send({ tenantId: accountId }),
      post(key, 'usage', { tenantId: accountId, emailCount: 1 }),
      info(key, accountId),
    ];
    for (const res of await Promise.all(calls(usageKey))) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    const readOnlyStatuses = (await Promise.all(calls(readOnly))).map((res) => res.status);
    expect(readOnlyStatuses).toEqual([200, 403, 403, 403, 403, 403, 200]);
    expect(await db.query('SELECT 1 FROM billing_customers WHERE account_id = $1', [accountId])).toEqual([]);
    expect((await info(adminKey, accountId).expect(200)).body.currentPeriod.emailsSent).toBe(0);
    await t.http.get('/api/billing/info').query({ tenantId: accountId }).expect(401);
  });

  it('validates the bodies', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Validation');
    const fieldsOf = async (path: string, body: object) => {
      const res = await post(adminKey, path, body).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      return [...new Set(res.body.error.details.fields.map((f: { field: string }) => f.field))];
    };
    expect(await fieldsOf('usage', { tenantId: accountId, emailCount: 0 })).toEqual(['emailCount']);
    expect(await fieldsOf('usage', { tenantId: accountId, emailCount: 1.5 })).toEqual(['emailCount']);
    expect(await fieldsOf('usage', { tenantId: accountId, emailCount: 10_000_001 })).toEqual(['emailCount']);
    expect(await fieldsOf('usage', { tenantId: accountId, emailCount: '5' })).toEqual(['emailCount']);
    expect(await fieldsOf('usage', { emailCount: 5 })).toEqual(['tenantId']);
    expect(await fieldsOf('customer', { tenantId: accountId, email: 'not an address', name: '' })).toEqual(['email', 'name']);
    expect(await fieldsOf('customer', { tenantId: accountId, email: 'a@b.example', name: '   ' })).toEqual(['name']);
    expect(await fieldsOf('subscription', { tenantId: accountId, plan: 'starter', coupon: 'x' })).toEqual(['coupon']);
    await post(adminKey, 'usage', { tenantId: accountId, emailCount: 10_000_000 }).expect(200);

    // Hostile shapes get the D-10 400, never a 5xx.
    const hostile = [
      t.http.get('/api/billing/info').set(bearer(adminKey)).set('Content-Type', 'application/json').send('[1, 2]'),
      t.http.delete('/api/billing/subscription').set(bearer(adminKey)).set('Content-Type', 'application/json').send('[]'),
      t.http
        .get('/api/billing/info')
        .set(bearer(adminKey))
        .query({ tenantId: [accountId, accountId] }),
      t.http
        .get('/api/billing/info')
        .set(bearer(adminKey))
        .send({ tenantId: { $ne: null } }),
      post(adminKey, 'usage', [{ tenantId: accountId, emailCount: 1 }]),
      post(adminKey, 'customer', { tenantId: accountId, email: 'a@b.example', name: 'x'.repeat(201) }),
      post(adminKey, 'subscription', { tenantId: 'acc_\u0000', plan: 'starter' }),
    ];
    for (const res of await Promise.all(hostile)) {
      expect([res.status, res.body.error?.code]).toEqual([400, 'VALIDATION_FAILED']);
    }
  });

  it('records a reported usage once per Idempotency-Key', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Idempotent usage');
    const report = () =>
      t.http
        .post('/api/billing/usage')
        .set(bearer(adminKey))
        .set('Idempotency-Key', 'report-1')
        .send({ tenantId: accountId, emailCount: 40 });
    const first = await report().expect(200);
    const replay = await report().expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect((await info(adminKey, accountId).expect(200)).body.currentPeriod.emailsSent).toBe(40);
  });

  it('lets one of two concurrent subscriptions of a tenant through and answers the other 409', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Race');
    await selfService(accountId);
    await customerFor(adminKey, accountId);
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        ['starter', 'developer'].map((plan) => post(adminKey, 'subscription', { tenantId: accountId, plan })),
      );
      expect(results.map((res) => res.status).sort()).toEqual([201, 409]);
      expect(results.find((res) => res.status === 409)!.body.error.code).toBe('CONFLICT');
      const active = await db.query(`SELECT id FROM billing_subscriptions WHERE account_id = $1 AND status = 'active'`, [accountId]);
      expect(active).toEqual([{ id: results.find((res) => res.status === 201)!.body.id }]);
      await t.http.delete('/api/billing/subscription').set(bearer(adminKey)).send({ tenantId: accountId }).expect(200);
    }
  });
});
