import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { DataSource } from 'typeorm';
import { ApiKeyCache } from '../../src/auth/api-key.cache';
import { AddOperatorPermissionsAndRaisedTier1795700005000 } from '../../src/database/migrations/1795700005000-AddOperatorPermissionsAndRaisedTier';
import { BULL_BOARD_PATH } from '../../src/operator/bull-board';
import { JobName, QueueName } from '../../src/queue/queue.constants';
import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, type TestApp } from '../support/test-app';

const METRICS_TOKEN = 'prometheus-scrape-token-for-operator-routes';
const OPERATOR_PERMISSIONS = ['operator.queues', 'operator.queues.manage', 'operator.metrics'];
const basic = (password: string) => ({ Authorization: `Basic ${Buffer.from(`ops:${password}`).toString('base64')}` });
const from = (ip: string) => ({ 'X-Forwarded-For': ip });

// Bull Board and /metrics check every restriction of the operator's key and their own operator.* permissions;
// only the operator account's keys may hold those.
describe('operator routes: Bull Board and /metrics', () => {
  let t: TestApp;
  let queue: Queue;
  let tenant: { accountId: string; adminKey: string };

  beforeAll(async () => {
    t = await createTestApp({ env: { METRICS_TOKEN, TRUST_PROXY: 'loopback' } });
    queue = t.app.get<Queue>(getQueueToken(QueueName.Webhooks), { strict: false });
    tenant = await createAccount(t, 'Tenant');
  });

  afterAll(async () => {
    await t.close();
  });

  /** An operator admin key holding only `permissions` (and the restrictions given). */
  const operatorKey = async (permissions: string[], restrictions: Record<string, unknown> = {}) =>
    (await createKey(t, t.operatorKey, { keyType: 'admin', permissions, restrictions })).key;

  /** A delayed job no worker will touch for an hour: something for Bull Board to remove. */
  const delayedJob = async () => (await queue.add(JobName.DeliverWebhook, { deliveryId: 'whd_none' }, { delay: 3_600_000 })).id;
  const removeJob = (key: string, jobId: string | number) =>
    t.http.put(`${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}/${jobId}/clean`).set(basic(key));

  describe('Bull Board', () => {
    it('answers a key without operator.queues 403, in the one error body', async () => {
      const metricsOnly = await operatorKey(['operator.metrics']);
      for (const path of [BULL_BOARD_PATH, `${BULL_BOARD_PATH}/api/queues`]) {
        const res = await t.http.get(path).set(basic(metricsOnly)).expect(403);
        expect(res.body).toEqual({
          error: { code: 'FORBIDDEN', message: 'This key lacks the permission operator.queues' },
          documentation: 'http://mailroom.test/docs#errors',
        });
      }
      // A tenant's admin key is not the operator's, whatever it holds.
      const tenantRes = await t.http.get(BULL_BOARD_PATH).set(basic(tenant.adminKey)).expect(403);
      expect(tenantRes.body.error).toEqual({ code: 'FORBIDDEN', message: 'Only keys of the operator account can call this route' });
    });

    it('lets operator.queues look but not retry, clean or pause; operator.queues.manage may', async () => {
      const viewer = await operatorKey(['operator.queues']);
      const manager = await operatorKey(['operator.queues', 'operator.queues.manage']);
      const board = await t.http.get(BULL_BOARD_PATH).set(basic(viewer)).expect(200);
      expect(board.headers['content-type']).toMatch(/^text\/html/);
      const queues = await t.http.get(`${BULL_BOARD_PATH}/api/queues`).set(basic(viewer)).expect(200);
      expect(queues.body.queues.map((q: { name: string }) => q.name)).toEqual(expect.arrayContaining(Object.values(QueueName)));
      await t.http.head(`${BULL_BOARD_PATH}/api/queues`).set(basic(viewer)).expect(200);

      const jobId = await delayedJob();
      const job = await t.http.get(`${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}/${jobId}`).set(basic(viewer)).expect(200);
      expect(job.body.job).toMatchObject({ id: String(jobId), name: JobName.DeliverWebhook });

      const writes = [
        removeJob(viewer, jobId),
        t.http.put(`${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}/retry/failed`).set(basic(viewer)),
        t.http.put(`${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}/clean/completed`).set(basic(viewer)),
        t.http.put(`${BULL_BOARD_PATH}/api/queues/pause`).set(basic(viewer)),
        t.http.post(`${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}/add`).set(basic(viewer)).send({ name: 'x', data: {} }),
        t.http.patch(`${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}/${jobId}/update-data`).set(basic(viewer)).send({ data: {} }),
        t.http.delete(`${BULL_BOARD_PATH}/api/queues/${QueueName.Webhooks}`).set(basic(viewer)),
      ];
      for (const res of await Promise.all(writes)) {
        expect([res.status, res.body]).toEqual([
          403,
          {
            error: { code: 'FORBIDDEN', message: 'This key lacks the permission operator.queues.manage' },
            documentation: 'http://mailroom.test/docs#errors',
          },
        ]);
      }
      expect(await queue.getJob(jobId)).not.toBeNull();
      expect(await queue.isPaused()).toBe(false);
      expect(await queue.getJobCounts()).toMatchObject({ waiting: 0, delayed: 1 });

      await removeJob(manager, jobId).expect(204);
      expect(await queue.getJob(jobId)).toBeNull();
    });

    it('refuses an IP-allowlisted key from another address (403 IP_NOT_ALLOWED) and an expired one (401, with the challenge)', async () => {
      const allowlisted = await operatorKey(OPERATOR_PERMISSIONS, { ip_whitelist: ['203.0.113.0/24'] });
      await t.http.get(`${BULL_BOARD_PATH}/api/queues`).set(basic(allowlisted)).set(from('203.0.113.7')).expect(200);
      const outside = await t.http.get(`${BULL_BOARD_PATH}/api/queues`).set(basic(allowlisted)).set(from('198.51.100.7')).expect(403);
      expect(outside.body.error).toEqual({ code: 'IP_NOT_ALLOWED', message: 'This key may not be used from 198.51.100.7' });
      const jobId = await delayedJob();
      await removeJob(allowlisted, jobId).set(from('198.51.100.7')).expect(403);
      expect(await queue.getJob(jobId)).not.toBeNull();

      const { key: expiring, keyId } = await createKey(t, t.operatorKey, {
        keyType: 'admin',
        permissions: OPERATOR_PERMISSIONS,
        restrictions: { expires_at: new Date(Date.now() + 3_600_000).toISOString() },
      });
      await t.app.get(DataSource).query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [keyId]);
      const expired = await t.http.get(BULL_BOARD_PATH).set(basic(expiring)).expect(401);
      expect(expired.headers['www-authenticate']).toMatch(/^Basic realm="Mailroom queues"/);
      expect(expired.body.error).toEqual({ code: 'AUTH_KEY_EXPIRED', message: 'The API key has expired' });
      await removeJob(expiring, jobId).expect(401);
      expect(await queue.getJob(jobId)).not.toBeNull();
    });

    it('asks a browser without a credential, or with an unknown key, for the password', async () => {
      for (const headers of [{}, basic(`svc_sk_admin_${'0'.repeat(64)}`)]) {
        const res = await t.http.get(BULL_BOARD_PATH).set(headers).expect(401);
        expect(res.headers['www-authenticate']).toMatch(/^Basic realm="Mailroom queues"/);
      }
    });
  });

  describe('/metrics', () => {
    it('takes an operator key holding operator.metrics as a bearer or basic password, and METRICS_TOKEN', async () => {
      const scraper = await operatorKey(['operator.metrics']);
      const byBearer = await t.http.get('/metrics').set(bearer(scraper)).expect(200);
      expect(byBearer.text).toContain('# TYPE mailroom_http_request_duration_seconds histogram');
      await t.http.get('/metrics').set(basic(scraper)).expect(200);
      await t.http.get('/metrics').set(bearer(METRICS_TOKEN)).expect(200);

      const queuesOnly = await operatorKey(['operator.queues']);
      const refused = await t.http.get('/metrics').set(bearer(queuesOnly)).expect(403);
      expect(refused.body).toEqual({
        error: { code: 'FORBIDDEN', message: 'This key lacks the permission operator.metrics' },
        documentation: 'http://mailroom.test/docs#errors',
      });
      await t.http.get('/metrics').set(bearer(tenant.adminKey)).expect(403);

      const allowlisted = await operatorKey(['operator.metrics'], { ip_whitelist: ['203.0.113.0/24'] });
      await t.http.get('/metrics').set(bearer(allowlisted)).set(from('203.0.113.9')).expect(200);
      const outside = await t.http.get('/metrics').set(bearer(allowlisted)).set(from('192.0.2.9')).expect(403);
      expect(outside.body.error.code).toBe('IP_NOT_ALLOWED');
      const wrong = await t.http.get('/metrics').set(bearer('not-the-metrics-token')).expect(401);
      expect(wrong.headers['www-authenticate']).toMatch(/^Basic realm="Mailroom metrics"/);
    });
  });

  describe('operator.* permissions', () => {
    it('are refused to a tenant’s admin key (400) and left out of its defaults', async () => {
      for (const permission of OPERATOR_PERMISSIONS) {
        const res = await t.http
          .post('/api-keys')
          .set(bearer(tenant.adminKey))
          .send({ name: 'ops', keyType: 'admin', permissions: ['email.send', permission] });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({
          code: 'VALIDATION_FAILED',
          details: { fields: [{ field: 'permissions', message: `a admin key cannot hold: ${permission}` }] },
        });
      }
      const { key } = await createKey(t, tenant.adminKey, { keyType: 'admin' });
      const listed = (await t.http.get('/api-keys').set(bearer(key)).expect(200)).body;
      const keys: { permissions: string[] }[] = listed.apiKeys;
      for (const k of keys) expect(k.permissions.filter((p) => p.startsWith('operator.'))).toEqual([]);
      expect(keys.find((k) => k.permissions.includes('billing.write'))).toBeDefined();
      await t.http
        .post('/auth/keys')
        .set(bearer(tenant.adminKey))
        .send({ name: 'ops', permissions: ['operator.metrics'] })
        .expect(400);
    });

    it('are held by the operator’s admin keys by default, and given by the migration to keys made before it', async () => {
      const { key, keyId } = await createKey(t, t.operatorKey, { keyType: 'admin' });
      const db = t.app.get(DataSource);
      const permissionsOf = async () => (await db.query('SELECT permissions FROM api_keys WHERE id = $1', [keyId]))[0].permissions;
      expect(await permissionsOf()).toEqual(expect.arrayContaining(OPERATOR_PERMISSIONS));

      // Back to the schema before the migration: the key holds no operator.* and Bull Board refuses it.
      const migration = new AddOperatorPermissionsAndRaisedTier1795700005000();
      const runner = db.createQueryRunner();
      try {
        await migration.down(runner);
        expect((await permissionsOf()).filter((p: string) => p.startsWith('operator.'))).toEqual([]);
        await t.app.get(ApiKeyCache).invalidate('*');
        await t.http.get(BULL_BOARD_PATH).set(basic(key)).expect(403);
        await migration.up(runner);
      } finally {
        await runner.release();
      }
      const after: string[] = await permissionsOf();
      expect(after.slice(-3)).toEqual(OPERATOR_PERMISSIONS);
      expect(new Set(after).size).toBe(after.length);
      await t.app.get(ApiKeyCache).invalidate('*');
      await t.http.get(BULL_BOARD_PATH).set(basic(key)).expect(200);
      await t.http.get('/metrics').set(bearer(key)).expect(200);
      // The tenant's keys got nothing.
      const tenantKeys = await db.query('SELECT permissions FROM api_keys WHERE account_id = $1', [tenant.accountId]);
      for (const row of tenantKeys) expect(row.permissions.filter((p: string) => p.startsWith('operator.'))).toEqual([]);
    });
  });
});
