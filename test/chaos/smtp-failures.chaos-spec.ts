import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { deliveredCounts, duplicated, missing, startSendStream, unexpectedAnswers, waitForReadiness } from './support/send-stream';

// The provider refusing connections for a while, then answering 535 to AUTH (a wrong SMTP password), under a
// stream of sends: those are the sender's failures, so messages wait and retry, nobody is bounced or
// suppressed, /health/ready says the provider is down, and everything arrives once it works again.
describe('SMTP provider failures', () => {
  let sink: SmtpSink;
  let t: TestApp;
  let adminKey: string;
  const domain = 'smtp-chaos.acme.test';

  beforeAll(async () => {
    sink = await startSmtpSink({ auth: true });
    t = await createTestApp({
      env: {
        SMTP_URL: `smtp://mailroom:secret@127.0.0.1:${sink.port}`,
        EMAIL_RETRY_FIRST_DELAY_MS: '20',
        EMAIL_SWEEP_INTERVAL_MS: '300',
        EMAIL_SWEEP_AFTER_MS: '2000',
      },
    });
    const account = await createAccount(t, 'Smtp chaos');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  it('defers through refused connections and 535, suppresses nobody, reports the provider and recovers', async () => {
    const prefix = `smtp-${randomBytes(3).toString('hex')}`;
    const stream = startSendStream(t.http, adminKey, `hello@${domain}`, prefix);
    await new Promise((r) => setTimeout(r, 800));

    sink.refuseConnections(true);
    const refused = await waitForReadiness(t.http, (status) => status === 503);
    expect(refused.body.checks.provider).toBe('down');
    await new Promise((r) => setTimeout(r, 1500));

    sink.refuseConnections(false);
    sink.rejectAuth(true);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await t.http.get('/health/ready')).body.checks.provider).toBe('down');

    sink.rejectAuth(false);
    await waitForReadiness(t.http, (status, body) => status === 200 && body.checks.provider === 'up');
    const outcomes = await stream.stop();
    expect(unexpectedAnswers(outcomes)).toEqual([]);

    const accepted = outcomes.filter((o) => o.status === 200);
    const counts = await deliveredCounts(
      sink,
      accepted.map((o) => o.subject),
    );
    expect(missing(counts)).toEqual([]);
    expect(duplicated(counts)).toEqual([]);

    const suppression = await t.http.get('/email/suppression').set(bearer(adminKey)).expect(200);
    expect(suppression.body.count).toBe(0);
    const rows: { status: string; n: number }[] = await t.app
      .get(DataSource)
      .query(`SELECT status, count(*)::int AS n FROM messages WHERE subject LIKE $1 GROUP BY status`, [`${prefix} %`]);
    expect(rows).toEqual([{ status: 'sent', n: accepted.length }]);
    const deferrals: { n: number }[] = await t.app
      .get(DataSource)
      .query(`SELECT count(*)::int AS n FROM message_events WHERE type = 'deferred' AND detail LIKE '%535%'`);
    expect(deferrals[0].n).toBeGreaterThan(0);
  });
});
