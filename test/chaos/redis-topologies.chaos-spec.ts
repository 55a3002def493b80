import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiKeysService } from '../../src/api-keys/api-keys.service';
import { RedisService } from '../../src/redis/redis.service';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { command, PrivateRedisCluster, PrivateSentinel, startPrivateRedisCluster, startPrivateSentinel } from './support/redis-topologies';

// The whole app on a Redis Cluster and on Redis Sentinel of this test's own, through REDIS_URL alone: an email
// is accepted (idempotently) and arrives, and the limiter counts in Redis (Bull, the pacer, the quota and
// limiter scripts, idempotency and pub/sub all run on the topology). On the Cluster every key shares the hash
// slot of the prefix's tag; behind Sentinel the app follows a failover to the promoted replica.
const ENV = {
  RATE_LIMIT_ENABLED: 'true',
  QUOTAS_ENABLED: 'true',
  DEFAULT_ACCOUNT_TIER: 'enterprise',
  EMAIL_RETRY_FIRST_DELAY_MS: '20',
  EMAIL_SWEEP_INTERVAL_MS: '300',
  EMAIL_SWEEP_AFTER_MS: '1000',
};

describe('Redis topologies through REDIS_URL', () => {
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await startSmtpSink();
  });
  afterAll(async () => {
    await sink?.close();
  });

  interface Tenant {
    accountId: string;
    adminKey: string;
    domain: string;
  }

  async function tenantOf(t: TestApp): Promise<Tenant> {
    const { accountId, adminKey } = await createAccount(t, 'Topology');
    const domain = `${randomBytes(3).toString('hex')}.topology.test`;
    await createVerifiedDomain(t, accountId, domain);
    // Two quotas, so that every send moves two counters in one script call.
    await t.app
      .get(DataSource)
      .query('UPDATE accounts SET settings = $2 WHERE id = $1', [
        accountId,
        { quotas: { emails_per_month: 100 }, global_limits: { hourly: 100 } },
      ]);
    return { accountId, adminKey, domain };
  }

  const send = (t: TestApp, tenant: Tenant, subject: string, idempotencyKey?: string) =>
    t.http
      .post('/email/send')
      .set(bearer(tenant.adminKey))
      .set(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {})
      .timeout(10_000)
      .send({ from: `hello@${tenant.domain}`, to: 'ada@example.org', subject, text: 'on a topology' });

  const arrivals = (subject: string) => sink.messages.filter((mail) => mail.parsed?.subject === subject).length;

  /** Sent twice with one Idempotency-Key: one message, delivered once. */
  async function sendsAnEmailOnce(t: TestApp, tenant: Tenant): Promise<void> {
    const subject = `topology ${randomBytes(4).toString('hex')}`;
    const first = await send(t, tenant, subject, subject);
    expect(first.status).toBe(200);
    const replay = await send(t, tenant, subject, subject);
    expect(replay.status).toBe(200);
    expect(replay.body.messageId).toBe(first.body.messageId);
    await sink.waitFor((mail) => mail.parsed?.subject === subject, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(arrivals(subject)).toBe(1);
  }

  /** A key allowed 2 requests a minute: counted down in Redis (in process, each instance would allow 1), then refused. */
  async function limitsRequests(t: TestApp, tenant: Tenant): Promise<void> {
    const { secret } = await t.app
      .get(ApiKeysService)
      .create(tenant.accountId, { name: 'limited', keyType: 'usage', restrictions: { burst_limit: 2 } });
    for (const remaining of [1, 0]) {
      const res = await t.http.get('/auth/whoami').set(bearer(secret));
      expect([res.status, res.headers['x-ratelimit-limit'], res.headers['x-ratelimit-remaining']]).toEqual([200, '2', String(remaining)]);
    }
    const refused = await t.http.get('/auth/whoami').set(bearer(secret));
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('API_KEY_RATE_LIMIT');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  }

  async function carriesMessages(t: TestApp): Promise<void> {
    const redis = t.app.get(RedisService);
    const received: string[] = [];
    await redis.subscribe('topology-probe', (message) => received.push(message));
    await redis.publish('topology-probe', 'hello');
    await waitFor(
      'the published message',
      () => received,
      (messages) => messages.includes('hello'),
      5000,
    );
  }

  /** The queue's, the limiter's, the quotas' and idempotency's keys are there, and nothing else. */
  function expectEveryFeaturesKeys(prefix: string, keys: string[]): void {
    for (const kind of ['bull:email:', 'rl:', 'quota:', 'idempotency:']) {
      expect(keys.filter((key) => key.startsWith(prefix + kind)).length).toBeGreaterThan(0);
    }
    expect(keys.filter((key) => !key.startsWith(prefix))).toEqual([]);
  }

  describe('on a Redis Cluster', () => {
    let cluster: PrivateRedisCluster;
    let t: TestApp;

    beforeAll(async () => {
      cluster = await startPrivateRedisCluster(3);
      t = await createTestApp({ env: { ...ENV, REDIS_URL: cluster.url, SMTP_URL: sink.url } });
    }, 60_000);
    afterAll(async () => {
      await t?.close();
      await cluster?.close();
    });

    it('sends, limits and carries pub/sub messages, with every key of the installation in one hash slot', async () => {
      const tenant = await tenantOf(t);
      await sendsAnEmailOnce(t, tenant);
      await limitsRequests(t, tenant);
      await carriesMessages(t);

      const prefix = t.app.get(RedisService).key();
      expect(prefix).toBe(`{${t.env.REDIS_KEY_PREFIX.replace(/:$/, '')}}:`);
      const keys = await cluster.keys();
      // Had a script or pipeline crossed slots, it would have failed instead of leaving its keys.
      expectEveryFeaturesKeys(
        prefix,
        keys.map(({ key }) => key),
      );
      expect(new Set(keys.map(({ port }) => port)).size).toBe(1);
    }, 60_000);
  });

  describe('behind Redis Sentinel', () => {
    let sentinel: PrivateSentinel;
    let t: TestApp;

    beforeAll(async () => {
      sentinel = await startPrivateSentinel();
      t = await createTestApp({ env: { ...ENV, REDIS_URL: sentinel.url, SMTP_URL: sink.url } });
    }, 60_000);
    afterAll(async () => {
      await t?.close();
      await sentinel?.close();
    });

    it('sends, limits and carries pub/sub messages on the master, and goes on after a failover to the replica', async () => {
      const tenant = await tenantOf(t);
      await sendsAnEmailOnce(t, tenant);
      await limitsRequests(t, tenant);
      await carriesMessages(t);
      const prefix = t.app.get(RedisService).key();
      expect(prefix).toBe(t.env.REDIS_KEY_PREFIX);
      expectEveryFeaturesKeys(prefix, (await command(await sentinel.masterPort(), 'KEYS', '*')) as string[]);

      await sentinel.failOver();
      // Sends made while the app reconnects are answered (accepted, or refused with Retry-After); then one goes through.
      const subject = `after failover ${randomBytes(4).toString('hex')}`;
      const accepted = await waitFor(
        'a send accepted on the new master',
        async () => {
          const res = await send(t, tenant, subject, subject);
          if (res.status !== 200) expect([res.status, typeof res.headers['retry-after']]).toEqual([503, 'string']);
          return res.status;
        },
        (status) => status === 200,
        30_000,
      );
      expect(accepted).toBe(200);
      await sink.waitFor((mail) => mail.parsed?.subject === subject, 30_000);
      await limitsRequests(t, tenant);
    }, 90_000);
  });
});
