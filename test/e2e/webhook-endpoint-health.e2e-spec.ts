import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { startTimedReceiver, type TimedReceiver } from '../support/timed-receiver';
import { waitForValue } from '../support/wait-for';
import { webhookApi } from '../support/webhook-api';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

/**
 * What counts toward disabling a webhook: only the failures of the endpoint at the URL the webhook has now, and only
 * as its row stands (a success committed meanwhile wins). Real HTTP receivers, PostgreSQL and Redis.
 */
describe('webhook endpoint health', () => {
  let t: TestApp;
  let receiver: WebhookReceiver<Record<string, unknown>>;
  /** Answers as told, slowly if need be: an attempt in flight across a change. */
  let timed: TimedReceiver;
  let base: string;
  const unique = () => randomBytes(4).toString('hex');

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    timed = await startTimedReceiver();
    base = receiver.base;
    t = await createTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_RETRY_SCHEDULE: '100ms',
        WEBHOOK_DISABLE_AFTER_FAILING_MS: '4000',
      },
    });
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await timed?.close();
  });

  /** An account with a verified domain to send from. */
  async function tenant(): Promise<{ accountId: string; adminKey: string; domain: string }> {
    const owner = await createAccount(t, `Health ${unique()}`);
    const domain = `${unique()}.health.test`;
    await createVerifiedDomain(t, owner.accountId, domain);
    return { ...owner, domain };
  }

  const { register, send, webhookOf, deliveriesOf } = webhookApi(() => t);
  const hooksAt = (path: string) => receiver.received.filter((hook) => hook.path === path);

  it('keeps failures to the URL they happened at: a new URL starts clean, and a 410 from the old one disables nothing', async () => {
    const owner = await tenant();
    const oldPath = `/moving-old-${unique()}`;
    const newPath = `/moving-new-${unique()}`;
    timed.behave(oldPath, { status: 500 });
    const hook = await register(owner.adminKey, { url: `${timed.base}${oldPath}`, events: ['sent'] });
    await send(owner);
    await waitForValue('the first delivery to fail', async () => (await deliveriesOf(owner.adminKey, hook.id))[0]?.status === 'failed');
    expect((await webhookOf(owner.adminKey, hook.id)).failingSince).toEqual(expect.any(String));

    // An attempt in flight at the old URL when the URL changes, answered 410 Gone after the change.
    timed.behave(oldPath, { status: 410, delayMs: 1000 });
    const before = timed.at(oldPath).length;
    await send(owner);
    await waitForValue('the attempt at the old URL', () => timed.at(oldPath).length === before + 1);
    const moved = await t.http
      .patch(`/email/webhooks/${hook.id}`)
      .set(bearer(owner.adminKey))
      .send({ url: `${base}${newPath}` })
      .expect(200);
    expect(moved.body).toMatchObject({ url: `${base}${newPath}`, enabled: true, failingSince: null });
    const answered = await waitForValue('the old URL’s 410 to be recorded', async () =>
      (await deliveriesOf(owner.adminKey, hook.id)).find((d) => d.attempts.some((a) => a.statusCode === 410)),
    );
    expect(answered.status).toBe('failed');
    expect(await webhookOf(owner.adminKey, hook.id)).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });

    const later = await send(owner);
    await waitForValue('the next event at the new URL', () => hooksAt(newPath).find((hook) => hook.body.messageId === later));
  });

  it('does not count a failure of Mailroom’s own (a signing secret it cannot open) against the endpoint', async () => {
    const owner = await tenant();
    const path = `/unsigned-${unique()}`;
    const hook = await register(owner.adminKey, { url: `${base}${path}`, events: ['sent'] });
    await t.app.get(DataSource).query(`UPDATE webhooks SET secret = 'not a sealed secret' WHERE id = $1`, [hook.id]);
    await send(owner);
    const [failed] = await waitForValue('the delivery to fail', async () => {
      const list = await deliveriesOf(owner.adminKey, hook.id);
      return list[0]?.status === 'failed' && list;
    });
    const unsigned = 'the signing secret could not be opened (the server log says why)';
    expect(failed.attempts.map((a) => [a.statusCode, a.error])).toEqual([
      [null, unsigned],
      [null, unsigned],
    ]);
    expect(hooksAt(path)).toEqual([]);
    expect(await webhookOf(owner.adminKey, hook.id)).toMatchObject({ enabled: true, failingSince: null });
  });

  it('leaves a webhook alone when a success was committed after a failing attempt read it', async () => {
    const owner = await tenant();
    const path = `/racing-${unique()}`;
    receiver.answers.set(path, 500);
    const hook = await register(owner.adminKey, { url: `${base}${path}`, events: ['sent'] });
    const db = t.app.get(DataSource);
    // Failing for an hour, as the attempt's statement will read it.
    await db.query(`UPDATE webhooks SET failing_since = now() - interval '1 hour' WHERE id = $1`, [hook.id]);
    // Another batch's success, committed while that statement runs: it holds the webhook's row until then.
    const other = db.createQueryRunner();
    await other.connect();
    try {
      await other.startTransaction();
      await other.query('UPDATE webhooks SET failing_since = NULL WHERE id = $1', [hook.id]);
      await send(owner);
      await waitForValue('the failed attempt’s write to wait for the row', async () => {
        const [row] = await db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return row.n > 0;
      });
      await other.commitTransaction();
    } finally {
      if (other.isTransactionActive) await other.rollbackTransaction();
      await other.release();
    }
    await waitForValue('the delivery to fail', async () => (await deliveriesOf(owner.adminKey, hook.id))[0]?.status === 'failed');
    expect(await webhookOf(owner.adminKey, hook.id)).toMatchObject({ enabled: true, disabledReason: null });
  });
});
