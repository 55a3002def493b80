import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { databaseUrl, dropDatabase } from '../support/test-env';
import { PrivateRedis, startPrivateRedis } from './support/private-servers';

/** One account runs out while Redis is away, the other after it is back. */
const QUOTAS = { during: 30, after: 60 };

// Quotas through a Redis crash (every counter lost), on a redis-server of this test's own: checks go to
// PostgreSQL while it is away, its counters load again from the usage rows when it is back, and across the
// whole run exactly the quota is accepted: never one more, never a send refused for Redis being away.
describe('quotas through a Redis crash', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  const database = `mailroom_chaos_quotas_${randomBytes(4).toString('hex')}`;
  const tenants = {} as Record<keyof typeof QUOTAS, { accountId: string; adminKey: string; domain: string }>;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    t = await createTestApp({
      stores: { databaseUrl: databaseUrl(database), redisUrl: redis.url },
      env: { QUOTAS_ENABLED: 'true', APP_ROLE: 'api' },
    });
    for (const [name, quota] of Object.entries(QUOTAS) as [keyof typeof QUOTAS, number][]) {
      const account = await createAccount(t, `Quota chaos ${name}`);
      const domain = `${name}.quota-chaos.test`;
      await t.app
        .get(DataSource)
        .query(`UPDATE accounts SET tier = 'enterprise', settings = $2 WHERE id = $1`, [
          account.accountId,
          { quotas: { emails_per_month: quota } },
        ]);
      await createVerifiedDomain(t, account.accountId, domain);
      tenants[name] = { ...account, domain };
    }
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await redis?.close();
    await dropDatabase(database);
  });

  it('accepts exactly each quota, four sends at a time per account, while Redis crashes and comes back', async () => {
    const statuses: Record<keyof typeof QUOTAS, number[]> = { during: [], after: [] };
    const codes = new Set<string>();
    const send = async (name: keyof typeof QUOTAS) => {
      const { adminKey, domain } = tenants[name];
      const res = await t.http
        .post('/email/send')
        .set('Authorization', `Bearer ${adminKey}`)
        .timeout(10_000)
        .send({ from: `hello@${domain}`, to: 'ada@example.org', subject: 'chaos', text: 'chaos' });
      statuses[name].push(res.status);
      if (res.status === 429) {
        codes.add(res.body.error.code);
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
    };
    const step = () => Promise.all([1, 2, 3, 4].flatMap(() => [send('during'), send('after')]));
    for (let i = 0; i < 5; i++) await step(); // 20 each accepted with Redis
    await redis.stop();
    for (let i = 0; i < 6; i++) await step(); // 24 more each against PostgreSQL: "during" runs out
    await redis.start();
    // Every counter is gone; until the app's connections are back some checks still go to PostgreSQL.
    for (let i = 0; i < 14; i++) {
      await step();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    for (const [name, quota] of Object.entries(QUOTAS) as [keyof typeof QUOTAS, number][]) {
      expect(statuses[name].filter((s) => s !== 200 && s !== 429)).toEqual([]);
      expect(statuses[name].filter((s) => s === 200)).toHaveLength(quota);
      const rows: { emails: string; messages: number }[] = await t.app.get(DataSource).query(
        `SELECT (SELECT sum(emails) FROM account_usage_hourly WHERE account_id = $1) AS emails,
                (SELECT count(*)::int FROM messages WHERE account_id = $1) AS messages`,
        [tenants[name].accountId],
      );
      expect(rows[0]).toEqual({ emails: String(quota), messages: quota });
    }
    expect(statuses.after.slice(0, 44)).toEqual(Array(44).fill(200));
    expect([...codes]).toEqual(['QUOTA_EXCEEDED']);
  });
});
