import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { ensureDatabase } from '../../src/database/database.options';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-env';
import { waitFor } from '../support/wait-for';
import { PrivateReplica, startPrivateReplica } from './support/postgres-replica';
import { PrivatePostgres, startPrivatePostgres } from './support/private-servers';

// DATABASE_READ_URL on a real streaming replica of a PostgreSQL of this test's own: the analytics routes read the
// replica (its statements run there, none on the primary) and see the sends once it has caught up; everything
// else, the sends' writes and their reads, stays on the primary.
const APPLICATION_NAME = 'mailroom-analytics-replica';

describe('analytics on a read replica (DATABASE_READ_URL)', () => {
  let primary: PrivatePostgres;
  let replica: PrivateReplica;
  let sink: SmtpSink;
  let t: TestApp;

  beforeAll(async () => {
    [primary, sink] = await Promise.all([startPrivatePostgres(), startSmtpSink()]);
    // The database exists before the copy is taken, so that the replica has it from the start.
    await ensureDatabase(primary.url('mailroom'));
    replica = await startPrivateReplica(Number(new URL(primary.url('mailroom')).port));
    t = await createTestApp({
      stores: { databaseUrl: primary.url('mailroom'), redisUrl: TEST_REDIS_URL },
      env: { SMTP_URL: sink.url, DATABASE_READ_URL: `${replica.url('mailroom')}?application_name=${APPLICATION_NAME}` },
    });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await Promise.all([replica?.close(), primary?.close(), sink?.close()]);
  });

  /** The statements of the app's sessions on a server that read the email rollups, with the session's name. */
  async function rollupReadsOn(url: string): Promise<{ application_name: string }[]> {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ application_name: string }>(
        `SELECT application_name FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%FROM email_stats_daily%'`,
      );
      return rows;
    } finally {
      await client.end();
    }
  }

  it('answers from the replica once it has the sends, and reads nothing of analytics on the primary', async () => {
    const { accountId, adminKey } = await createAccount(t, 'Replica');
    const domain = `${randomBytes(3).toString('hex')}.replica.test`;
    await createVerifiedDomain(t, accountId, domain);
    for (const n of [1, 2, 3]) {
      await t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({ from: `hello@${domain}`, to: `reader${n}@example.org`, subject: `replica ${n}`, text: 'counted on the replica' })
        .expect(200);
    }
    await waitFor(
      'the three emails at the sink',
      () => sink.messages.length,
      (n) => n >= 3,
    );

    const analytics = await waitFor(
      'the replica to count the three sends',
      async () => (await t.http.get('/email/analytics').query({ period: 'last_24_hours' }).set(bearer(adminKey)).expect(200)).body,
      (body) => body.emails_sent === 3,
    );
    expect(analytics).toMatchObject({ emails_sent: 3, period: 'last_24_hours' });

    const onReplica = await rollupReadsOn(replica.url('mailroom'));
    expect(onReplica.length).toBeGreaterThan(0);
    expect(onReplica.every((session) => session.application_name === APPLICATION_NAME)).toBe(true);
    expect(await rollupReadsOn(primary.url('mailroom'))).toEqual([]);
  });
});
