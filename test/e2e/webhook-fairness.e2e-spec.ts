import { DataSource } from 'typeorm';
import { RedisService } from '../../src/redis/redis.service';
import { WebhookSweeper } from '../../src/webhooks/webhook.sweeper';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { startTimedReceiver, type TimedReceiver } from '../support/timed-receiver';
import { waitFor, waitForValue } from '../support/wait-for';

interface Delivery {
  id: string;
  status: string;
  attempts: { attempt: number; startedAt: string; statusCode: number | null; succeeded: boolean }[];
  nextAttemptAt: string | null;
}

const TIMEOUT_MS = 8000;
/** Workers of each of the two processes: 16 in all, fewer than the default slots of five endpoints (20). */
const WORKERS = 8;

/**
 * Each endpoint has its own slots and its own queue, shared by every worker process: a hanging endpoint holds up
 * only itself (one worker while it has not answered well), an endpoint never gets more requests at once than its
 * maxConcurrency nor more per second than its rate limit, one whose last attempt failed gets one at a time, and one
 * that says it is overloaded is left alone for as long as it asks (within the schedule).
 */
describe('webhook endpoints are served apart', () => {
  let t: TestApp;
  let second: TestApp;
  let receiver: TimedReceiver;

  beforeAll(async () => {
    receiver = await startTimedReceiver();
    t = await createTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_RETRY_SCHEDULE: '500ms,2h',
        WEBHOOK_WORKER_CONCURRENCY: String(WORKERS),
      },
    });
    // A second worker process on the same database and Redis: the limits hold across both.
    second = await createTestApp({ shareWith: t });
  });

  afterAll(async () => {
    await receiver?.close();
    await second?.close();
    await t?.close();
  });

  async function register(adminKey: string, body: Record<string, unknown>): Promise<string> {
    const res = await t.http
      .post('/email/webhooks')
      .set(bearer(adminKey))
      .send({ events: ['form.submission'], ...body });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  /** `count` form.submission events of the account, written to the outbox at once as the form pipeline writes them. */
  async function publish(accountId: string, count: number): Promise<void> {
    await t.app.get(DataSource).query(
      `INSERT INTO event_outbox (account_id, type, payload)
       SELECT $1, 'form.submission', jsonb_build_object('type', 'form.submission', 'formId', 'frm_fair', 'submissionId', 'sub_' || g,
         'fields', jsonb_build_object('n', g), 'timestamp', now())
       FROM generate_series(1, $2) g`,
      [accountId, count],
    );
  }

  async function deliveriesOf(adminKey: string, webhookId: string): Promise<Delivery[]> {
    const res = await t.http.get(`/email/webhooks/${webhookId}/deliveries?limit=100`).set(bearer(adminKey)).expect(200);
    return res.body.deliveries;
  }

  const allSucceeded = async (adminKey: string, webhookId: string, count: number) =>
    waitFor(
      `${count} deliveries to succeed`,
      () => deliveriesOf(adminKey, webhookId),
      (list) => list.length === count && list.every((d) => d.status === 'succeeded'),
    );

  // First, well before the sweepers' own first run (30 s after start), which would take the lock.
  it('re-queues the attempts an endpoint’s queue lost with Redis, and only those', async () => {
    const owner = await createAccount(t, 'Recovery');
    receiver.behave('/one-at-a-time', { hang: true });
    const single = await register(owner.adminKey, { url: `${receiver.base}/one-at-a-time`, maxConcurrency: 1 });
    const sweeper = t.app.get(WebhookSweeper);
    const everyPending = () => new Date(Date.now() + 3600_000);

    await publish(owner.accountId, 4);
    await waitFor(
      'the first request',
      () => receiver.at('/one-at-a-time').length,
      (n) => n === 1,
    );
    await waitFor(
      'four deliveries',
      () => deliveriesOf(owner.adminKey, single),
      (list) => list.length === 4,
    );
    // One attempt in flight, three waiting in the endpoint's queue: none is lost.
    expect(await sweeper.sweep(everyPending())).toBe(0);

    const redis = t.app.get(RedisService);
    await redis.client.del(redis.key('webhooks', 'endpoint', single, 'queue'));
    receiver.release('/one-at-a-time');
    await waitFor(
      'the attempt in flight to end',
      () => deliveriesOf(owner.adminKey, single),
      (list) => list.some((d) => d.status === 'succeeded'),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.at('/one-at-a-time')).toHaveLength(1);
    expect(await sweeper.sweep(everyPending())).toBe(3);

    await allSucceeded(owner.adminKey, single, 4);
    expect(receiver.at('/one-at-a-time')).toHaveLength(4);
    expect(receiver.maxInFlight('/one-at-a-time')).toBe(1);
    await t.http.delete(`/email/webhooks/${single}`).set(bearer(owner.adminKey)).expect(200);
  });

  it('delivers every event to a fast endpoint while a hanging one still waits for its first answers', async () => {
    const owner = await createAccount(t, 'Fairness');
    receiver.behave('/hangs', { hang: true });
    const hanging = await register(owner.adminKey, { url: `${receiver.base}/hangs` });
    const fast = await register(owner.adminKey, { url: `${receiver.base}/fast` });

    await publish(owner.accountId, 100);
    await waitFor(
      'the fast endpoint to get all 100 events',
      () => receiver.at('/fast').length,
      (n) => n >= 100,
      TIMEOUT_MS - 1000,
    );

    // No attempt of the hanging endpoint has ended yet: its first time-out is still running. Never having
    // answered well, it got one slot.
    const stuck = await deliveriesOf(owner.adminKey, hanging);
    expect(stuck).toHaveLength(100);
    expect(stuck.every((d) => d.status === 'pending' && d.attempts.length === 0)).toBe(true);
    expect(receiver.at('/hangs')).toHaveLength(1);
    expect(receiver.maxInFlight('/hangs')).toBe(1);

    const delivered = await allSucceeded(owner.adminKey, fast, 100);
    expect(delivered.every((d) => d.attempts.length === 1 && d.attempts[0].statusCode === 200)).toBe(true);
    expect(new Set(receiver.at('/fast').map((r) => r.webhookId)).size).toBe(100);
    expect(receiver.maxInFlight('/fast')).toBeLessThanOrEqual(4);

    await t.http.delete(`/email/webhooks/${hanging}`).set(bearer(owner.adminKey)).expect(200);
    await t.http.delete(`/email/webhooks/${fast}`).set(bearer(owner.adminKey)).expect(200);
    receiver.release('/hangs');
  });

  it('delivers every event to a fast endpoint while hanging endpoints whose slots outnumber the workers wait', async () => {
    const owner = await createAccount(t, 'Many hanging');
    const paths = Array.from({ length: 5 }, (_, i) => `/hangs-${i}`);
    for (const path of paths) receiver.behave(path, { hang: true });
    const hanging: string[] = [];
    for (const path of paths) hanging.push(await register(owner.adminKey, { url: `${receiver.base}${path}` }));
    const fast = await register(owner.adminKey, { url: `${receiver.base}/fast-beside-many` });

    await publish(owner.accountId, 30);
    await waitFor(
      'the fast endpoint to get all 30 events',
      () => receiver.at('/fast-beside-many').length,
      (n) => n >= 30,
      TIMEOUT_MS - 1000,
    );

    for (const [i, path] of paths.entries()) {
      const stuck = await deliveriesOf(owner.adminKey, hanging[i]);
      expect(stuck).toHaveLength(30);
      expect(stuck.every((d) => d.status === 'pending' && d.attempts.length === 0)).toBe(true);
      expect(receiver.maxInFlight(path)).toBe(1);
    }
    await allSucceeded(owner.adminKey, fast, 30);
    expect(new Set(receiver.at('/fast-beside-many').map((r) => r.webhookId)).size).toBe(30);

    for (const id of [...hanging, fast]) await t.http.delete(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200);
    for (const path of paths) receiver.release(path);
  });

  it('sends an endpoint whose last attempt failed one request at a time', async () => {
    const owner = await createAccount(t, 'Failing');
    receiver.behave('/turns-bad', { delayMs: 100 });
    const endpoint = await register(owner.adminKey, { url: `${receiver.base}/turns-bad` });
    await publish(owner.accountId, 12);
    await allSucceeded(owner.adminKey, endpoint, 12);
    // Answering well, it gets all its slots.
    expect(receiver.maxInFlight('/turns-bad')).toBe(4);

    const healthyRequests = receiver.at('/turns-bad').length;
    receiver.behave('/turns-bad', { status: 500, delayMs: 100 });
    await publish(owner.accountId, 12);
    await waitFor(
      'every new delivery to fail twice',
      () => deliveriesOf(owner.adminKey, endpoint),
      (list) => list.length === 24 && list.filter((d) => d.attempts.length === 2).length === 12,
    );
    const failing = receiver.at('/turns-bad').slice(healthyRequests);
    expect(failing).toHaveLength(24);
    // From the first failed answer on, each request started alone (those in flight then ended first).
    const firstFailure = Math.min(...failing.map((r) => r.endedAt!));
    for (const request of failing.filter((r) => r.arrivedAt > firstFailure)) {
      const alongside = failing.filter(
        (other) => other !== request && other.arrivedAt <= request.arrivedAt && other.endedAt! > request.arrivedAt,
      );
      expect(alongside).toEqual([]);
    }
    expect(failing.filter((r) => r.arrivedAt > firstFailure).length).toBeGreaterThanOrEqual(20);
    await t.http.delete(`/email/webhooks/${endpoint}`).set(bearer(owner.adminKey)).expect(200);
  });

  it('sends an endpoint at most maxConcurrency requests at once across workers, and delivers every event', async () => {
    const owner = await createAccount(t, 'Concurrency');
    receiver.behave('/slow', { delayMs: 150 });
    const slow = await register(owner.adminKey, { url: `${receiver.base}/slow`, maxConcurrency: 3 });

    await publish(owner.accountId, 30);
    const delivered = await allSucceeded(owner.adminKey, slow, 30);

    expect(receiver.maxInFlight('/slow')).toBe(3);
    expect(delivered.every((d) => d.attempts.length === 1 && d.attempts[0].succeeded)).toBe(true);
    expect(receiver.at('/slow')).toHaveLength(30);
    expect(new Set(receiver.at('/slow').map((r) => r.webhookId)).size).toBe(30);
    await t.http.delete(`/email/webhooks/${slow}`).set(bearer(owner.adminKey)).expect(200);
  });

  it('starts at most rateLimitPerSecond requests in any second', async () => {
    const owner = await createAccount(t, 'Rate');
    const limited = await register(owner.adminKey, { url: `${receiver.base}/limited`, rateLimitPerSecond: 5 });

    await publish(owner.accountId, 12);
    await allSucceeded(owner.adminKey, limited, 12);

    const arrivals = receiver.at('/limited').map((r) => r.arrivedAt);
    expect(arrivals).toHaveLength(12);
    // The sixth request after any one came a second later (less a little for the way from worker to receiver).
    for (let i = 0; i + 5 < arrivals.length; i++) expect(arrivals[i + 5] - arrivals[i]).toBeGreaterThan(950);
    expect(arrivals[11] - arrivals[0]).toBeGreaterThan(1900);
    await t.http.delete(`/email/webhooks/${limited}`).set(bearer(owner.adminKey)).expect(200);
  });

  it('retries a 503 after the hour its Retry-After asks, and sends the endpoint nothing else meanwhile', async () => {
    const owner = await createAccount(t, 'Overloaded');
    receiver.behave('/busy', { status: 503, headers: { 'retry-after': '3600' } });
    const busy = await register(owner.adminKey, { url: `${receiver.base}/busy` });

    await publish(owner.accountId, 1);
    const [failed] = await waitForValue('the first attempt', async () => {
      const list = await deliveriesOf(owner.adminKey, busy);
      return list[0]?.attempts.length === 1 && list;
    });
    expect(failed.status).toBe('pending');
    expect(failed.attempts[0].statusCode).toBe(503);
    const waitMs = Date.parse(failed.nextAttemptAt!) - Date.parse(failed.attempts[0].startedAt);
    expect(waitMs).toBeGreaterThanOrEqual(3600_000);
    // Jitter adds at most 20 %.
    expect(waitMs).toBeLessThanOrEqual(3600_000 * 1.2 + 60_000);

    // A new event for the endpoint waits too, past the schedule's first wait (500 ms).
    await publish(owner.accountId, 1);
    await waitForValue('the second delivery', async () => (await deliveriesOf(owner.adminKey, busy)).length === 2);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const deliveries = await deliveriesOf(owner.adminKey, busy);
    expect(deliveries.map((d) => d.attempts.length).sort()).toEqual([0, 1]);
    expect(receiver.at('/busy')).toHaveLength(1);
    await t.http.delete(`/email/webhooks/${busy}`).set(bearer(owner.adminKey)).expect(200);
  });

  it('takes, shows and changes the limits, and refuses bad ones naming the field', async () => {
    const owner = await createAccount(t, 'Settings');
    const created = await t.http
      .post('/email/webhooks')
      .set(bearer(owner.adminKey))
      .send({ url: `${receiver.base}/settings`, events: ['sent'], maxConcurrency: 2, rateLimitPerSecond: 10 })
      .expect(201);
    expect(created.body).toMatchObject({ maxConcurrency: 2, rateLimitPerSecond: 10 });
    const id = created.body.id;

    const patched = await t.http
      .patch(`/email/webhooks/${id}`)
      .set(bearer(owner.adminKey))
      .send({ maxConcurrency: 20, rateLimitPerSecond: null })
      .expect(200);
    expect(patched.body).toMatchObject({ maxConcurrency: 20, rateLimitPerSecond: null });
    expect((await t.http.get(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200)).body).toMatchObject({
      maxConcurrency: 20,
      rateLimitPerSecond: null,
    });

    for (const [body, field] of [
      [{ maxConcurrency: 0 }, 'maxConcurrency'],
      [{ maxConcurrency: 101 }, 'maxConcurrency'],
      [{ maxConcurrency: 2.5 }, 'maxConcurrency'],
      [{ maxConcurrency: null }, 'maxConcurrency'],
      [{ rateLimitPerSecond: 0 }, 'rateLimitPerSecond'],
      [{ rateLimitPerSecond: 'ten' }, 'rateLimitPerSecond'],
    ] as const) {
      const refused = await t.http.patch(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).send(body).expect(400);
      expect(refused.body.error.code).toBe('VALIDATION_FAILED');
      expect(refused.body.error.details.fields).toContainEqual({ field, message: expect.any(String) });
      expect(refused.body.error.details.fields.every((f: { field: string }) => f.field === field)).toBe(true);
    }
    const refused = await t.http
      .post('/email/webhooks')
      .set(bearer(owner.adminKey))
      .send({ url: `${receiver.base}/settings`, events: ['sent'], maxConcurrency: 1000 })
      .expect(400);
    expect(refused.body.error.details.fields).toEqual([{ field: 'maxConcurrency', message: expect.stringMatching(/100/) }]);
    await t.http.delete(`/email/webhooks/${id}`).set(bearer(owner.adminKey)).expect(200);
  });
});
