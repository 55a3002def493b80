import { DataSource } from 'typeorm';
import { databaseOptions } from '../../src/database/database.options';
import { CreateBillingPlanChanges1795730001000 } from '../../src/database/migrations/1795730001000-CreateBillingPlanChanges';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/test-env';

// Billing periods: a subscribe, plan change or cancel closes the month so far under the plan that was active,
// recorded in billing_plan_changes; billing info shows one line per part with its emails, fee and overage.
describe('billing periods', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    db = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const operator = () => bearer(t.operatorKey);
  const report = async (tenantId: string, emailCount: number) =>
    (await t.http.post('/api/billing/usage').set(operator()).send({ tenantId, emailCount }).expect(200)).body;
  const info = async (tenantId: string) => (await t.http.get('/api/billing/info').set(operator()).query({ tenantId }).expect(200)).body;
  const subscribe = async (tenantId: string, plan: string) => {
    await t.http.post('/api/billing/customer').set(operator()).send({ tenantId, email: 'billing@acme.example', name: 'Acme' }).expect(201);
    return (await t.http.post('/api/billing/subscription').set(operator()).send({ tenantId, plan }).expect(201)).body;
  };
  const changePlan = (tenantId: string, newPlan: string) =>
    t.http.patch('/api/billing/subscription/change').set(operator()).send({ tenantId, newPlan }).expect(200);
  const cancel = (tenantId: string) => t.http.delete('/api/billing/subscription').set(operator()).send({ tenantId }).expect(200);
  const history = (accountId: string) =>
    db.query(
      `SELECT plan, tier_before, tier_after, subscription_id, hour_emails_before::int AS hour_emails_before,
              date_trunc('hour', at, 'UTC') AS hour
         FROM billing_plan_changes WHERE account_id = $1 ORDER BY at`,
      [accountId],
    );
  /** The emails of the account's usage row of `hour` now. */
  const hourEmails = async (accountId: string, hour: Date) =>
    Number(
      (await db.query('SELECT emails FROM account_usage_hourly WHERE account_id = $1 AND hour = $2', [accountId, hour]))[0]?.emails ?? 0,
    );

  /** A monthly fee for a line's share of its month, to the second, rounded half up to the cent (worked apart from the code). */
  const proRata = (monthlyFee: number, line: { from: string; to: string }, period: { start: string; end: string }) => {
    const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);
    const share = (seconds(line.to) - seconds(line.from)) / (seconds(period.end) - seconds(period.start));
    return Math.floor(monthlyFee * 100 * share + 0.5) / 100;
  };
  /**
   * Every line's fee is its plan's fee pro rata to its share of the month or of the included emails it used,
   * whichever is more; the period's fees, overage and amount due are the lines' sums.
   */
  const expectConsistent = (period: {
    start: string;
    end: string;
    fees: number;
    overage: number;
    overageCost: number;
    amountDue: number;
    lines: { plan: string; from: string; to: string; fee: number; emailsSent: number; overage: number; overageCost: number }[];
  }) => {
    const fees: Record<string, number> = { starter: 10, developer: 25, scale: 90 };
    const allowances: Record<string, number> = { starter: 10_000, developer: 50_000, scale: 250_000 };
    let runningTotal = 0;
    for (const line of period.lines) {
      const [before, after] = [runningTotal, (runningTotal += line.emailsSent)];
      const allowance = allowances[line.plan];
      const used = allowance ? Math.max(0, Math.min(after, allowance) - Math.min(before, allowance)) : 0;
      const forAllowance = allowance ? Math.floor((fees[line.plan] * 100 * used) / allowance + 0.5) / 100 : 0;
      expect(line.fee).toBe(Math.max(proRata(fees[line.plan] ?? 0, line, period), forAllowance));
    }
    expect(period.lines[0].from).toBe(period.start);
    expect(period.lines.at(-1)!.to).toBe(period.end);
    const sum = (of: (line: (typeof period.lines)[number]) => number) => period.lines.reduce((acc, line) => acc + of(line), 0);
    expect(period.fees).toBeCloseTo(
      sum((line) => line.fee),
      10,
    );
    expect(period.overage).toBe(sum((line) => line.overage));
    expect(period.overageCost).toBeCloseTo(
      sum((line) => line.overageCost),
      10,
    );
    expect(period.amountDue).toBeCloseTo(period.fees + period.overageCost, 10);
  };

  it('keeps the overage of a starter month that is canceled, and records the subscribe and the cancel', async () => {
    const { accountId } = await createAccount(t, 'Canceled at the end');
    const subscription = await subscribe(accountId, 'starter');
    await report(accountId, 10_455);
    await cancel(accountId);

    const { currentPeriod, ...terms } = await info(accountId);
    // The current terms are Free's, but the starter part keeps its 455 emails over: 0.46.
    expect(terms).toMatchObject({ plan: 'free', status: 'canceled', monthlyFee: 0, includedEmails: 360 });
    expect(currentPeriod).toMatchObject({ emailsSent: 10_455, emailsIncluded: 360, overage: 455, overageCost: 0.46 });
    expect(currentPeriod.lines).toEqual([
      expect.objectContaining({ plan: 'free', emailsSent: 0, emailsIncluded: 360, overage: 0, overageCost: 0, fee: 0 }),
      expect.objectContaining({ plan: 'starter', emailsSent: 10_455, emailsIncluded: 10_000, overage: 455, overageCost: 0.46 }),
      expect.objectContaining({ plan: 'free', emailsSent: 0, emailsIncluded: 360, overage: 0, overageCost: 0, fee: 0 }),
    ]);
    expectConsistent(currentPeriod);

    const [subscribed, canceled] = await history(accountId);
    expect(subscribed).toMatchObject({ plan: 'starter', tier_before: 'free', tier_after: 'pro', subscription_id: subscription.id });
    expect(subscribed.hour_emails_before).toBe(0);
    expect(canceled).toMatchObject({ plan: null, tier_before: 'pro', tier_after: 'free', subscription_id: subscription.id });
    // The cancel saw the hour's 10,455 emails unless the hour turned in between (then they are in an earlier hour).
    expect(canceled.hour_emails_before).toBe(await hourEmails(accountId, canceled.hour));
  });

  it('keeps the starter overage when the plan is upgraded, and bills the rest of the month by the larger plan', async () => {
    const { accountId } = await createAccount(t, 'Upgraded at the end');
    await subscribe(accountId, 'starter');
    await report(accountId, 10_455);
    await changePlan(accountId, 'scale');
    const usage = await report(accountId, 1000);
    // The usage answer counts the same overage: 455 of the starter part.
    expect(usage).toEqual({
      emailsRecorded: 1000,
      currentPeriodEmails: 11_455,
      includedEmails: 250_000,
      overage: 455,
      plan: 'scale',
      currentPeriodForwards: 0,
    });

    const { currentPeriod } = await info(accountId);
    expect(currentPeriod).toMatchObject({ emailsSent: 11_455, emailsIncluded: 250_000, overage: 455, overageCost: 0.46 });
    expect(currentPeriod.lines).toEqual([
      expect.objectContaining({ plan: 'free', emailsSent: 0 }),
      expect.objectContaining({ plan: 'starter', emailsSent: 10_455, overage: 455, overageCost: 0.46 }),
      expect.objectContaining({ plan: 'scale', emailsSent: 1000, emailsIncluded: 250_000, overage: 0, overageCost: 0 }),
    ]);
    expect(currentPeriod.lines[2].fee).toBeGreaterThan(0); // the scale part runs to the month's end
    expectConsistent(currentPeriod);
    expect((await history(accountId)).map((row: { plan: string | null }) => row.plan)).toEqual(['starter', 'scale']);
  });

  it('splits the month at a subscription: Free emails before it, the plan’s after, counted against its included emails', async () => {
    const { accountId } = await createAccount(t, 'Subscribed mid-month');
    await report(accountId, 400);
    await subscribe(accountId, 'starter');
    await report(accountId, 10_200);

    const { currentPeriod } = await info(accountId);
    const [free, starter] = currentPeriod.lines;
    expect(currentPeriod.lines).toHaveLength(2);
    // 400 on Free (360 included this month: 40 over, not charged); 400 → 10,600 on starter: 600 over.
    expect(free).toMatchObject({
      plan: 'free',
      from: currentPeriod.start,
      emailsSent: 400,
      emailsIncluded: 360,
      overage: 40,
      overageCost: 0,
      fee: 0,
    });
    expect(starter).toMatchObject({
      plan: 'starter',
      to: currentPeriod.end,
      emailsSent: 10_200,
      emailsIncluded: 10_000,
      overage: 600,
      overageCost: 0.6,
    });
    expect(free.to).toBe(starter.from);
    expect(currentPeriod).toMatchObject({ emailsSent: 10_600, emailsIncluded: 10_000, overage: 640, overageCost: 0.6 });
    expectConsistent(currentPeriod);
    expect(currentPeriod.amountDue).toBeCloseTo(starter.fee + 0.6, 10);

    // A plan change to the same plan changes nothing, so it records nothing.
    await changePlan(accountId, 'starter');
    expect(await history(accountId)).toHaveLength(1);
  });

  it('keeps every number of a month without a plan change as it was, with one line for the whole month', async () => {
    const { accountId } = await createAccount(t, 'Whole month');
    await report(accountId, 200);
    const { currentPeriod, ...terms } = await info(accountId);
    expect(terms).toMatchObject({ plan: 'free', status: 'none', monthlyFee: 0, includedEmails: 360 });
    const now = new Date();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(currentPeriod).toEqual({
      start,
      end,
      emailsSent: 200,
      emailsIncluded: 360,
      overage: 0,
      overageCost: 0,
      fees: 0,
      amountDue: 0,
      lines: [{ plan: 'free', from: start, to: end, fee: 0, emailsSent: 200, emailsIncluded: 360, overage: 0, overageCost: 0 }],
      forwardsSent: 0,
    });
  });

  it('counts a credit given to an hour of the month that counted nothing, as the quotas do', async () => {
    // A list send's message cancelled later is credited to the hour its page was made, not to the send's.
    const { accountId } = await createAccount(t, 'Credited in another hour');
    await report(accountId, 100);
    const now = Date.now();
    const hour = now - (now % 3_600_000);
    const monthStart = new Date(now);
    monthStart.setUTCDate(1);
    monthStart.setUTCHours(0, 0, 0, 0);
    const otherHour = new Date(hour > monthStart.getTime() ? hour - 3_600_000 : hour + 3_600_000);
    await db.query(`INSERT INTO account_usage_hourly (account_id, hour, emails, submissions, forwards) VALUES ($1, $2, -5, 0, 0)`, [
      accountId,
      otherHour,
    ]);
    const { currentPeriod } = await info(accountId);
    expect(currentPeriod.emailsSent).toBe(95);
    expect(currentPeriod.lines).toEqual([expect.objectContaining({ plan: 'free', emailsSent: 95 })]);
  });

  it('backfills the history of existing subscriptions when migrating', async () => {
    const name = await cloneTemplateDatabase();
    const scratch = new DataSource(databaseOptions(databaseUrl(name)));
    await scratch.initialize();
    try {
      const q = (sql: string, params: unknown[] = []) => scratch.query(sql, params);
      await q(`INSERT INTO accounts (id, name, tier) VALUES ('acc_active', 'A', 'pro'), ('acc_canceled', 'C', 'free')`);
      await q(
        `INSERT INTO billing_customers (id, account_id, email, name)
         VALUES ('cus_a', 'acc_active', 'a@a.example', 'A'), ('cus_c', 'acc_canceled', 'c@c.example', 'C')`,
      );
      await q(
        `INSERT INTO billing_subscriptions (id, account_id, customer_id, plan, status, created_at, canceled_at, raised_tier) VALUES
           ('subs_a', 'acc_active', 'cus_a', 'developer', 'active', '2026-10-03T10:20:00Z', NULL, true),
           ('subs_c', 'acc_canceled', 'cus_c', 'starter', 'canceled', '2026-10-04T08:00:00Z', '2026-10-20T15:30:00Z', false)`,
      );
      await q(`INSERT INTO account_usage_hourly (account_id, hour, emails) VALUES ('acc_canceled', '2026-10-20T15:00:00Z', 70)`);
      const migration = new CreateBillingPlanChanges1795730001000();
      const runner = scratch.createQueryRunner();
      try {
        await migration.down(runner);
        await migration.up(runner);
      } finally {
        await runner.release();
      }
      const rows = await q(
        `SELECT account_id, at, plan, tier_before, tier_after, subscription_id, hour_emails_before::int AS hour_emails_before
           FROM billing_plan_changes ORDER BY account_id, at`,
      );
      expect(rows).toEqual([
        {
          account_id: 'acc_active',
          at: new Date('2026-10-03T10:20:00Z'),
          plan: 'developer',
          tier_before: 'free',
          tier_after: 'pro',
          subscription_id: 'subs_a',
          hour_emails_before: 0,
        },
        {
          account_id: 'acc_canceled',
          at: new Date('2026-10-04T08:00:00Z'),
          plan: 'starter',
          tier_before: 'free',
          tier_after: 'pro',
          subscription_id: 'subs_c',
          hour_emails_before: 0,
        },
        {
          account_id: 'acc_canceled',
          at: new Date('2026-10-20T15:30:00Z'),
          plan: null,
          tier_before: 'pro',
          tier_after: 'free',
          subscription_id: 'subs_c',
          hour_emails_before: 70,
        },
      ]);
    } finally {
      await scratch.destroy();
      await dropDatabase(name);
    }
  });
});
