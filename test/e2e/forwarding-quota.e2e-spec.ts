import { randomBytes } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { rawMessage } from '../support/raw-message';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

interface Tenant {
  accountId: string;
  adminKey: string;
  domain: string;
}

/**
 * Forwarded mail has its own quota, forwards_per_month (D-37), through real SMTP in and out: it no longer spends
 * the account's emails_per_month or global_limits, and running out of it stops forwarding (451, the sender
 * retries) but never the account's own sends. GET /settings and billing show what was forwarded.
 */
describe('Forwarding quota: forwards_per_month', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let client: Transporter;
  const unique = () => randomBytes(5).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    const port = await freePort();
    t = await createTestApp({
      env: { QUOTAS_ENABLED: 'true', SMTP_URL: sink.url, INBOUND_SMTP_PORT: String(port), INBOUND_SMTP_HOST: '127.0.0.1' },
    });
    client = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  });

  afterAll(async () => {
    client?.close();
    await t?.close();
    await sink?.close();
  });

  const nextMonth = () => {
    const now = new Date();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
  };

  /** A Free account (the default tier) whose domain forwards team@ to two addresses and everything else to one. */
  async function tenant(quotas?: Record<string, number>): Promise<Tenant> {
    const { accountId, adminKey } = await createAccount(t, `Forwarder ${unique()}`);
    const domain = `f${unique()}.forward.test`;
    await createVerifiedDomain(t, accountId, domain);
    await t.http
      .put(`/domains/${domain}`)
      .set(bearer(adminKey))
      .send({ forwarding: { team: ['ada@dest.test', 'bob@dest.test'], '*': ['catch@dest.test'] } })
      .expect(200);
    if (quotas) await t.http.patch(`/admin/accounts/${accountId}`).set(bearer(t.operatorKey)).send({ quotas }).expect(200);
    return { accountId, adminKey, domain };
  }

  const mailTo = (to: string, subject: string) =>
    client.sendMail({ envelope: { from: 'sender@origin.test', to: [to] }, raw: rawMessage(to, subject) });

  /** The SMTP answer to a refused message (nodemailer rejects with the server's code and text). */
  async function refused(to: string, subject: string): Promise<{ responseCode: number; response: string }> {
    const err = await mailTo(to, subject).then(
      () => null,
      (e: { responseCode: number; response: string }) => e,
    );
    if (!err) throw new Error('the server took the message');
    return { responseCode: err.responseCode, response: err.response };
  }

  const send = (who: Tenant, subject = `s-${unique()}`) =>
    t.http
      .post('/v1/send')
      .set(bearer(who.adminKey))
      .send({ from: `hello@${who.domain}`, to: 'ada@example.org', subject, text: 'Hello' });

  const settingsOf = async (who: Tenant) => (await t.http.get('/settings').set(bearer(who.adminKey)).expect(200)).body;
  const billingInfo = async (who: Tenant) =>
    (await t.http.get('/api/billing/info').query({ tenantId: who.accountId }).set(bearer(who.adminKey)).expect(200)).body;

  const inboundOf = async (who: Tenant) =>
    Number((await t.app.get(DataSource).query('SELECT count(*) AS n FROM inbound_messages WHERE account_id = $1', [who.accountId]))[0].n);

  it('forwards mail for a Free account whose emails and global_limits are used up, counting it as forwards only', async () => {
    const who = await tenant();
    // The first month's 360 emails, reported through billing, and a monthly global limit they fill too.
    const reported = await t.http
      .post('/api/billing/usage')
      .set(bearer(who.adminKey))
      .send({ tenantId: who.accountId, emailCount: 360 })
      .expect(200);
    expect(reported.body).toMatchObject({ currentPeriodEmails: 360, currentPeriodForwards: 0 });
    await t.http
      .patch('/settings')
      .set(bearer(who.adminKey))
      .send({ global_limits: { monthly: 360 } })
      .expect(200);
    const refusedSend = await send(who);
    expect(refusedSend.status).toBe(429);
    expect(refusedSend.body.error.details.quota).toBe('emails_per_month');

    const s = `exhausted-${unique()}`;
    const info = await mailTo(`team@${who.domain}`, s);
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
    const mail = await sink.waitFor((m) => m.parsed?.subject === s);
    expect(mail.envelope.rcptTo.sort()).toEqual(['ada@dest.test', 'bob@dest.test']);

    const { quotas } = await settingsOf(who);
    expect(quotas.forwards_per_month).toEqual({ limit: 500, used: 2, remaining: 498, reset_time: nextMonth() });
    expect(quotas.emails_per_month).toMatchObject({ limit: 360, used: 360, remaining: 0 });
    expect(quotas.global_monthly).toMatchObject({ limit: 360, used: 360, remaining: 0 });
    expect((await billingInfo(who)).currentPeriod).toMatchObject({
      emailsSent: 360,
      emailsIncluded: 360,
      overage: 0,
      overageCost: 0,
      forwardsSent: 2,
    });
  });

  it('refuses forwarding with 451 once forwards_per_month is used up, storing nothing, while /v1/send still sends', async () => {
    const who = await tenant({ forwards_per_month: 2 });
    const first = `first-${unique()}`;
    await mailTo(`one@${who.domain}`, first);
    await sink.waitFor((m) => m.parsed?.subject === first);

    // team@ goes to two destinations: two forwards, with one left the whole message waits.
    const pair = await refused(`team@${who.domain}`, `pair-${unique()}`);
    expect(pair.responseCode).toBe(451);
    expect(pair.response).toContain('this request needs 2');

    const second = `second-${unique()}`;
    await mailTo(`two@${who.domain}`, second);
    await sink.waitFor((m) => m.parsed?.subject === second);
    const stored = await inboundOf(who);

    const over = `over-${unique()}`;
    const answer = await refused(`three@${who.domain}`, over);
    expect(answer.responseCode).toBe(451);
    expect(answer.response).toMatch(
      /^451 4\.7\.1 forwards_per_month exhausted, try again later: Quota exceeded: your plan allows 2 forwarded emails per calendar month \(0 left, this request needs 1\); it resets at /,
    );
    expect(await inboundOf(who)).toBe(stored);

    // The account's own sends are untouched: a Free account's emails_per_month is still whole.
    const own = `own-${unique()}`;
    expect((await send(who, own)).status).toBe(200);
    expect((await sink.waitFor((m) => m.parsed?.subject === own)).envelope.rcptTo).toEqual(['ada@example.org']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sink.messages.filter((m) => m.parsed?.subject === over)).toEqual([]);

    const { quotas } = await settingsOf(who);
    expect(quotas.forwards_per_month).toEqual({ limit: 2, used: 2, remaining: 0, reset_time: nextMonth() });
    expect(quotas.emails_per_month).toMatchObject({ used: 1 });
    expect(quotas.global_monthly.used).toBe(1);

    const usage = await t.http
      .post('/api/billing/usage')
      .set(bearer(who.adminKey))
      .send({ tenantId: who.accountId, emailCount: 1 })
      .expect(200);
    expect(usage.body).toEqual({
      emailsRecorded: 1,
      currentPeriodEmails: 2,
      includedEmails: 360,
      overage: 0,
      plan: 'free',
      currentPeriodForwards: 2,
    });
    expect((await billingInfo(who)).currentPeriod.forwardsSent).toBe(2);

    // The operator raises the quota: forwarding resumes at once.
    await t.http
      .patch(`/admin/accounts/${who.accountId}`)
      .set(bearer(t.operatorKey))
      .send({ quotas: { forwards_per_month: 3 } })
      .expect(200);
    const resumed = `resumed-${unique()}`;
    await mailTo(`three@${who.domain}`, resumed);
    await sink.waitFor((m) => m.parsed?.subject === resumed);
    expect((await settingsOf(who)).quotas.forwards_per_month).toMatchObject({ limit: 3, used: 3, remaining: 0 });
  });
});
