import { DataSource } from 'typeorm';
import { newId } from '../../src/common/ids';
import { CreateForwardingStats1795450552669 } from '../../src/database/migrations/1795450552669-CreateForwardingStats';
import { InboundMessage } from '../../src/forwarding/inbound-message.entity';
import { NO_FORWARDING, ZERO_DAY, ZERO_EMAIL } from '../support/analytics-zeros';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

interface Received {
  accountId: string;
  domain: string;
  recipients: string[];
  at: Date;
}

// Forwarding in analytics: messages the inbound SMTP server stored (inbound_messages rows, inserted here through the
// app's DataSource as the server does) are counted per account, hour, day and domain by a database trigger, and
// GET /analytics and GET /email/analytics answer from those rollups.
describe('forwarding analytics', () => {
  let t: TestApp;
  let db: DataSource;
  let acme: { accountId: string; adminKey: string };
  let other: { accountId: string; adminKey: string };
  let fresh: { accountId: string; adminKey: string };
  const now = new Date();
  const today = now.toISOString().slice(0, 10);
  // A message three days ago, at 10:30 UTC: read from the daily rollup by the periods, from the hourly one at a window's ends.
  const pastDay = new Date(now.getTime() - 3 * DAY_MS).toISOString().slice(0, 10);
  const nextDay = new Date(Date.parse(`${pastDay}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
  const pastAt = new Date(`${pastDay}T10:30:00Z`);

  /** Stores messages as the inbound SMTP server does, all in one INSERT statement. */
  const receive = (messages: Received[]) =>
    db.getRepository(InboundMessage).insert(
      messages.map((m) => ({
        id: newId('inb'),
        accountId: m.accountId,
        domain: m.domain,
        mailFrom: 'sender@example.org',
        recipients: m.recipients,
        clientAddress: '192.0.2.1',
        helo: 'mx.example.org',
        trace: '',
        size: 5,
        source: Buffer.from('Hi\r\n'),
        createdAt: m.at,
      })),
    );

  const overview = (key: string, query: Record<string, string> = {}) => t.http.get('/analytics').query(query).set(bearer(key)).expect(200);
  const emailAnalytics = (key: string, query: Record<string, string> = {}) =>
    t.http.get('/email/analytics').query(query).set(bearer(key)).expect(200);
  const forwardingOf = async (key: string, query: Record<string, string>) => (await overview(key, query)).body.forwarding;
  const forwardedOf = async (key: string, query: Record<string, string>) => (await emailAnalytics(key, query)).body.forwarded;

  beforeAll(async () => {
    t = await createTestApp();
    db = t.app.get(DataSource);
    acme = await createAccount(t, 'Acme');
    other = await createAccount(t, 'Other');
    fresh = await createAccount(t, 'Fresh');
    await createVerifiedDomain(t, acme.accountId, 'acme-fwd.test');
    await createVerifiedDomain(t, acme.accountId, 'shop-fwd.test');
    await createVerifiedDomain(t, other.accountId, 'other-fwd.test');

    // One statement with several accounts, domains, hours and days (one upsert per bucket), then one more message
    // of a bucket that has a row already (the upsert adds to it).
    const a = (name: string, domain = 'acme-fwd.test') => `${name}@${domain}`;
    await receive([
      { accountId: acme.accountId, domain: 'acme-fwd.test', recipients: [a('ada')], at: now },
      { accountId: acme.accountId, domain: 'acme-fwd.test', recipients: [a('bob'), a('cy')], at: now },
      {
        accountId: acme.accountId,
        domain: 'shop-fwd.test',
        recipients: [a('x', 'shop-fwd.test'), a('y', 'shop-fwd.test'), a('z', 'shop-fwd.test')],
        at: now,
      },
      { accountId: acme.accountId, domain: 'acme-fwd.test', recipients: [a('dan'), a('eve')], at: pastAt },
      { accountId: other.accountId, domain: 'other-fwd.test', recipients: ['zed@other-fwd.test'], at: now },
    ]);
    await receive([{ accountId: acme.accountId, domain: 'acme-fwd.test', recipients: [a('ada')], at: now }]);
  });

  afterAll(async () => {
    await t?.close();
  });

  const ACME_WEEK = {
    received: 5,
    recipients: 9,
    by_domain: [
      { domain: 'acme-fwd.test', received: 4, recipients: 6 },
      { domain: 'shop-fwd.test', received: 1, recipients: 3 },
    ],
  };

  it('answers the forwarding of the range per domain, most messages first, and a forwarded count per day', async () => {
    const res = await overview(acme.adminKey, { range: '7d' });
    const forwardedOn: Record<string, number> = { [today]: 4, [pastDay]: 1 };
    expect(res.body).toEqual({
      range: 'last_7_days',
      from: expect.any(String),
      to: expect.any(String),
      // Received mail is not email the account sent: what the forwarded messages become counts there.
      email: ZERO_EMAIL,
      forms: { submissions: 0, spam_blocked: 0, by_form: [] },
      forwarding: ACME_WEEK,
      // Every date of the window this request had (it may have crossed midnight UTC since `now`), zeros but two.
      daily: res.body.daily.map(({ date }: { date: string }) => ({ ...ZERO_DAY, date, forwarded: forwardedOn[date] ?? 0 })),
    });
    expect(res.body.daily).toHaveLength(7);
    expect(res.body.daily.map((d: { date: string }) => d.date)).toEqual(expect.arrayContaining([pastDay, today]));
  });

  it('counts the hours at a window’s ends and whole days alike', async () => {
    const acmeOnly = (received: number, recipients: number) => ({
      received,
      recipients,
      by_domain: [{ domain: 'acme-fwd.test', received, recipients }],
    });
    // Today only (last_24_hours), the past day as a whole day, its one hour, and windows either side of 10:30.
    expect(await forwardingOf(acme.adminKey, { range: '24h' })).toEqual({
      received: 4,
      recipients: 7,
      by_domain: [
        { domain: 'acme-fwd.test', received: 3, recipients: 4 },
        { domain: 'shop-fwd.test', received: 1, recipients: 3 },
      ],
    });
    expect(await forwardingOf(acme.adminKey, { from: pastDay, to: nextDay })).toEqual(acmeOnly(1, 2));
    expect(await forwardingOf(acme.adminKey, { from: `${pastDay}T10:00:00Z`, to: `${pastDay}T11:00:00Z` })).toEqual(acmeOnly(1, 2));
    expect(await forwardingOf(acme.adminKey, { from: `${pastDay}T10:31:00Z`, to: `${nextDay}T05:00:00Z` })).toEqual(acmeOnly(1, 2));
    expect(await forwardingOf(acme.adminKey, { from: `${pastDay}T11:00:00Z`, to: `${nextDay}T05:00:00Z` })).toEqual(NO_FORWARDING);
    expect(await forwardingOf(acme.adminKey, { from: `${pastDay}T00:00:00Z`, to: `${pastDay}T10:00:00Z` })).toEqual(NO_FORWARDING);
    const days = await overview(acme.adminKey, { from: `${pastDay}T05:00:00Z`, to: `${nextDay}T05:00:00Z` });
    expect(days.body.daily).toEqual([
      { ...ZERO_DAY, date: pastDay, forwarded: 1 },
      { ...ZERO_DAY, date: nextDay },
    ]);
  });

  it('adds the received messages to /email/analytics as forwarded, the email counts unchanged', async () => {
    const week = await emailAnalytics(acme.adminKey, { period: 'last_7_days' });
    expect(week.body).toEqual({ period: 'last_7_days', from: expect.any(String), to: expect.any(String), ...ZERO_EMAIL, forwarded: 5 });
    expect(await forwardedOf(acme.adminKey, { period: 'last_24_hours' })).toBe(4);
    expect(await forwardedOf(acme.adminKey, { from: `${pastDay}T10:00:00Z`, to: `${pastDay}T11:00:00Z` })).toBe(1);
    expect(await forwardedOf(acme.adminKey, { from: `${pastDay}T11:00:00Z`, to: nextDay })).toBe(0);
  });

  it('shows another account only its own forwarding, and a fresh account none', async () => {
    const page = await overview(other.adminKey, { range: '30d' });
    expect(page.body.forwarding).toEqual({
      received: 1,
      recipients: 1,
      by_domain: [{ domain: 'other-fwd.test', received: 1, recipients: 1 }],
    });
    expect(page.body.daily.reduce((sum: number, d: { forwarded: number }) => sum + d.forwarded, 0)).toBe(1);
    expect(await forwardedOf(other.adminKey, {})).toBe(1);

    const empty = await overview(fresh.adminKey);
    expect(empty.body.forwarding).toEqual(NO_FORWARDING);
    expect(empty.body.daily.every((d: { forwarded: number }) => d.forwarded === 0)).toBe(true);
    expect(await forwardedOf(fresh.adminKey, {})).toBe(0);
  });

  it('keeps a deleted domain’s received mail', async () => {
    await t.http.delete('/domains/shop-fwd.test').set(bearer(acme.adminKey)).expect(200);
    expect(await forwardingOf(acme.adminKey, { range: '7d' })).toEqual(ACME_WEEK);
  });

  it('rebuilds the same rollups from inbound_messages when the migration runs again (the backfill of an upgrade)', async () => {
    const snapshot = async () => ({
      hours: await db.query('SELECT * FROM forwarding_stats_hourly ORDER BY account_id, hour, domain'),
      days: await db.query('SELECT * FROM forwarding_stats_daily ORDER BY account_id, day, domain'),
    });
    const before = await snapshot();
    // Acme: two domains in the current hour, one in the past hour; Other: one.
    expect(before.hours.length).toBeGreaterThanOrEqual(4);
    expect(before.days.length).toBeGreaterThanOrEqual(4);

    const migration = new CreateForwardingStats1795450552669();
    const runner = db.createQueryRunner();
    await runner.startTransaction();
    try {
      await migration.down(runner);
      await migration.up(runner);
      await runner.commitTransaction();
    } catch (err) {
      await runner.rollbackTransaction();
      throw err;
    } finally {
      await runner.release();
    }
    expect(await snapshot()).toEqual(before);
    // The trigger is back: a new message counts.
    await receive([
      { accountId: other.accountId, domain: 'other-fwd.test', recipients: ['a@other-fwd.test', 'b@other-fwd.test'], at: new Date() },
    ]);
    expect(await forwardingOf(other.adminKey, {})).toEqual({
      received: 2,
      recipients: 3,
      by_domain: [{ domain: 'other-fwd.test', received: 2, recipients: 3 }],
    });
  });

  it('documents the new fields in Swagger', async () => {
    const { body } = await t.http.get('/docs-json').expect(200);
    const schemas = body.components.schemas;
    expect(Object.keys(schemas.AnalyticsOverviewDto.properties).sort()).toEqual([
      'daily',
      'email',
      'forms',
      'forwarding',
      'from',
      'range',
      'to',
    ]);
    expect(Object.keys(schemas.ForwardingSummaryDto.properties).sort()).toEqual(['by_domain', 'received', 'recipients']);
    expect(Object.keys(schemas.ForwardingDomainCountsDto.properties).sort()).toEqual(['domain', 'received', 'recipients']);
    expect(Object.keys(schemas.DailyAnalyticsDto.properties).sort()).toEqual(['date', ...Object.keys(ZERO_DAY)].sort());
    expect(schemas.EmailAnalyticsDto.properties.forwarded.description).toContain('received for forwarding');
  });
});
