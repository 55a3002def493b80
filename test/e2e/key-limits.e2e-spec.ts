import type { Response } from 'supertest';
import { DataSource, QueryRunner } from 'typeorm';
import { AccountsService } from '../../src/operator/accounts.service';
import { hashKey } from '../../src/auth/key-format';
import { AddKeysWithoutHourlyLimit1795700003000 } from '../../src/database/migrations/1795700003000-AddKeysWithoutHourlyLimit';
import { databaseOptions } from '../../src/database/database.options';
import { bearer, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/test-env';

const BOOTSTRAP_KEY = `svc_sk_admin_${'b1'.repeat(32)}`;
const NEXT_BOOTSTRAP_KEY = `svc_sk_admin_${'b2'.repeat(32)}`;

/**
 * Keys whose limits can be raised: an account's first admin key and the bootstrap key have no hourly limit
 * of their own (rateLimit null), so they make keys of any limit; PATCH /api-keys/{keyId} changes a key
 * within the calling key; a deleted BOOTSTRAP_ADMIN_KEY is not adopted again.
 */
describe('key limits: keys without an own hourly limit, PATCH /api-keys/{keyId}, bootstrap adopted once', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { BOOTSTRAP_ADMIN_KEY: BOOTSTRAP_KEY, RATE_LIMIT_ENABLED: 'true' } });
  });
  afterAll(() => t.close());

  /** An account made by the service (no /admin/* request), with its first admin key. */
  async function account(tier: 'free' | 'enterprise' = 'enterprise'): Promise<{ accountId: string; adminKey: string }> {
    const { account, secret } = await t.app.get(AccountsService).create('Tenant', tier);
    return { accountId: account.id, adminKey: secret };
  }
  const listed = async (adminKey: string, keyId: string) => {
    const res = await t.http.get('/api-keys').set(bearer(adminKey)).expect(200);
    return res.body.apiKeys.find((k: { keyId: string }) => k.keyId === keyId);
  };
  const patch = (callerKey: string, keyId: string, body: unknown, app = t) =>
    app.http
      .patch(`/api-keys/${keyId}`)
      .set(bearer(callerKey))
      .send(body as object);
  const limitHeaders = (res: Response) => ({
    limit: res.headers['x-ratelimit-limit'],
    scope: res.headers['x-ratelimit-scope'],
  });

  describe('an account’s first admin key has no hourly limit of its own', () => {
    it('is listed with rateLimit null, and only its account’s plan limits it', async () => {
      const res = await t.http.post('/admin/accounts').set(bearer(t.operatorKey)).send({ name: 'Globex' }).expect(201);
      expect(res.body.apiKey.rateLimit).toBeNull();
      const adminKey = res.body.apiKey.key as string;
      const keys = await t.http.get('/api-keys').set(bearer(adminKey)).expect(200);
      expect(keys.body.apiKeys).toEqual([expect.objectContaining({ name: 'First admin key', keyType: 'admin', rateLimit: null })]);

      const status = await t.http.get('/rate-limits/status').set(bearer(adminKey)).expect(200);
      expect(status.body.scopes.map((s: { scope: string; window: string; limit: number }) => [s.scope, s.window, s.limit])).toEqual([
        ['account', 'hour', 1000],
        ['account', 'minute', 50],
        ['account', 'burst', 100],
      ]);
    });

    it('makes a key of 50,000 requests an hour, whose own limit then applies to it', async () => {
      const { adminKey } = await account();
      const { key, keyId } = await createKey(t, adminKey, { keyType: 'usage', rateLimit: 50_000 });
      expect((await listed(adminKey, keyId)).rateLimit).toBe(50_000);
      const whoami = await t.http.get('/auth/whoami').set(bearer(key)).expect(200);
      expect(limitHeaders(whoami)).toEqual({ limit: '50000', scope: 'api-key' });
      const status = await t.http.get('/rate-limits/status').set(bearer(key)).expect(200);
      expect(status.body.scopes).toEqual([expect.objectContaining({ scope: 'api-key', window: 'hour', limit: 50_000, remaining: 49_999 })]);
      // The enterprise account's first admin key itself is held by no limit on an unlisted route.
      const own = await t.http.get('/auth/whoami').set(bearer(adminKey)).expect(200);
      expect(own.headers['x-ratelimit-limit']).toBeUndefined();
    });

    it('gives keys it makes without a rateLimit the type’s default, and no limit when asked for null', async () => {
      const { adminKey } = await account();
      const usage = await createKey(t, adminKey, { keyType: 'usage' });
      const site = await createKey(t, adminKey, { keyType: 'public', domainScope: 'example.com' });
      const unbounded = await createKey(t, adminKey, { keyType: 'usage', rateLimit: null });
      expect((await listed(adminKey, usage.keyId)).rateLimit).toBe(1000);
      expect((await listed(adminKey, site.keyId)).rateLimit).toBe(100);
      expect((await listed(adminKey, unbounded.keyId)).rateLimit).toBeNull();
      // A key with an hourly limit cannot make one without.
      const limited = await createKey(t, adminKey, { keyType: 'admin', rateLimit: 700 });
      const refused = await t.http.post('/api-keys').set(bearer(limited.key)).send({ name: 'x', keyType: 'usage', rateLimit: null });
      expect(refused.status).toBe(403);
      expect(refused.body.error.details.fields).toEqual([{ field: 'rateLimit', message: 'the creating key has an hourly limit of 700' }]);
    });
  });

  describe('PATCH /api-keys/{keyId}', () => {
    let owner: { accountId: string; adminKey: string };
    /** An admin key of the account held to a few permissions and 500 requests an hour. */
    let narrow: { key: string; keyId: string };

    beforeAll(async () => {
      owner = await account();
      narrow = await createKey(t, owner.adminKey, {
        keyType: 'admin',
        permissions: ['keys.manage', 'email.send', 'templates.read'],
        rateLimit: 500,
      });
    });

    function expectWider(res: Response, fields: { field: string; message: RegExp }[]) {
      expect(res.status).toBe(403);
      expect(res.body.error).toEqual({
        code: 'FORBIDDEN',
        message: expect.stringMatching(/^A key cannot change a key to be wider than itself: /),
        details: { fields: fields.map(({ field, message }) => ({ field, message: expect.stringMatching(message) })) },
      });
    }

    it('changes name, permissions, rateLimit and restrictions, and answers the key as GET /api-keys lists it', async () => {
      const { keyId } = await createKey(t, narrow.key, { keyType: 'usage' });
      const res = await patch(narrow.key, keyId, {
        name: 'Renamed',
        permissions: ['email.send'],
        rateLimit: 200,
        restrictions: { burst_limit: 10, ip_whitelist: ['127.0.0.0/8', '::1'] },
      }).expect(200);
      expect(res.body).toEqual(await listed(owner.adminKey, keyId));
      expect(res.body).toMatchObject({
        keyId,
        name: 'Renamed',
        keyType: 'usage',
        permissions: ['email.send'],
        rateLimit: 200,
        restrictions: { burst_limit: 10, ip_whitelist: ['127.0.0.0/8', '::1'] },
      });
    });

    it('lays restrictions over the key’s field by field: null removes one, left out keeps it; keeps what is left out', async () => {
      const { key, keyId } = await createKey(t, owner.adminKey, {
        keyType: 'usage',
        restrictions: { ip_whitelist: ['127.0.0.0/8', '::1'], burst_limit: 20 },
      });
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const first = await patch(owner.adminKey, keyId, { restrictions: { burst_limit: 7, expires_at: expiresAt } }).expect(200);
      expect(first.body).toMatchObject({
        name: 'test key',
        rateLimit: 1000,
        restrictions: { ip_whitelist: ['127.0.0.0/8', '::1'], burst_limit: 7, expires_at: expiresAt },
        expiresAt,
      });
      const second = await patch(owner.adminKey, keyId, { restrictions: { ip_whitelist: null, expires_at: null } }).expect(200);
      expect(second.body).toMatchObject({ restrictions: { burst_limit: 7 }, expiresAt: null });
      expect(second.body.restrictions).toEqual({ burst_limit: 7 });
      // The new per-minute limit holds at once.
      const whoami = await t.http.get('/auth/whoami').set(bearer(key)).expect(200);
      expect(limitHeaders(whoami)).toEqual({ limit: '7', scope: 'api-key' });
      const cleared = await patch(owner.adminKey, keyId, { restrictions: null }).expect(200);
      expect(cleared.body.restrictions).toEqual({});
    });

    it('takes effect at once: a permission removed answers 403 on the next call, here and on another instance', async () => {
      const { key, keyId } = await createKey(t, owner.adminKey, { keyType: 'admin' });
      const second = await createTestApp({ shareWith: t });
      try {
        await t.http.get('/api-keys').set(bearer(key)).expect(200);
        await second.http.get('/api-keys').set(bearer(key)).expect(200); // now cached on both instances
        await patch(owner.adminKey, keyId, { permissions: ['email.send'] }).expect(200);
        const here = await t.http.get('/api-keys').set(bearer(key));
        expect(here.status).toBe(403);
        expect(here.body.error.message).toMatch(/keys\.manage/);
        // Well before the cache's own expiry (800 ms): only the announced change can explain a 403.
        const deadline = Date.now() + 200;
        let status = 0;
        while (Date.now() < deadline && status !== 403) {
          status = (await second.http.get('/api-keys').set(bearer(key))).status;
        }
        expect(status).toBe(403);
      } finally {
        await second.close();
      }
    });

    it('raises a key’s hourly limit when the calling key has none, and shows it in the key’s limits at once', async () => {
      const { key, keyId } = await createKey(t, owner.adminKey, { keyType: 'usage' });
      await t.http.get('/rate-limits').set(bearer(key)).expect(200);
      const res = await patch(owner.adminKey, keyId, { rateLimit: 80_000 }).expect(200);
      expect(res.body.rateLimit).toBe(80_000);
      const limits = await t.http.get('/rate-limits').set(bearer(key)).expect(200);
      expect(limits.body.rate_limits.requests_per_hour).toMatchObject({ limit: 80_000 });
      const none = await patch(owner.adminKey, keyId, { rateLimit: null }).expect(200);
      expect(none.body.rateLimit).toBeNull();
      expect((await listed(owner.adminKey, keyId)).rateLimit).toBeNull();
    });

    it('refuses with 403 a change that makes a key wider than the calling key, naming each field', async () => {
      const { keyId } = await createKey(t, narrow.key, { keyType: 'usage' });
      expectWider(await patch(narrow.key, keyId, { rateLimit: 501 }), [
        { field: 'rateLimit', message: /^an hourly limit of 501 is above the calling key's 500$/ },
      ]);
      expectWider(await patch(narrow.key, keyId, { rateLimit: null }), [
        { field: 'rateLimit', message: /^the calling key has an hourly limit of 500$/ },
      ]);
      expectWider(await patch(narrow.key, keyId, { permissions: ['email.send', 'forms.send'] }), [
        { field: 'permissions', message: /^the calling key does not hold forms\.send$/ },
      ]);
      expectWider(await patch(narrow.key, keyId, { restrictions: { exempt: true } }), [
        { field: 'restrictions.exempt', message: /^the calling key is not exempt/ },
      ]);
      // Nor may it touch a key wider than itself, even to rename it.
      const firstKeyId = (await t.http.get('/api-keys?keyType=admin').set(bearer(owner.adminKey)).expect(200)).body.apiKeys.find(
        (k: { name: string }) => k.name === 'First admin key',
      ).keyId;
      const rename = await patch(narrow.key, firstKeyId, { name: 'mine now' });
      expect(rename.status).toBe(403);
      expect(rename.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['permissions', 'rateLimit']);
      expect((await listed(owner.adminKey, keyId)).rateLimit).toBe(500);
    });

    it('lets a key narrow itself, never widen itself back', async () => {
      const self = await createKey(t, owner.adminKey, { keyType: 'admin', permissions: ['keys.manage', 'email.send'], rateLimit: 900 });
      const res = await patch(self.key, self.keyId, { name: 'Narrowed', rateLimit: 300 }).expect(200);
      expect(res.body).toMatchObject({ name: 'Narrowed', rateLimit: 300 });
      expectWider(await patch(self.key, self.keyId, { rateLimit: 900 }), [{ field: 'rateLimit', message: /above the calling key's 300/ }]);
      // A key without an hourly limit of its own may raise it again.
      await patch(owner.adminKey, self.keyId, { rateLimit: 900 }).expect(200);
    });

    it.each([
      [{ rateLimit: 0 }, 'rateLimit'],
      [{ rateLimit: 'lots' }, 'rateLimit'],
      [{ name: '' }, 'name'],
      [{ permissions: ['email.explode'] }, 'permissions'],
      [{ permissions: ['domains.write'] }, 'permissions'],
      [{ permissions: 'email.send' }, 'permissions'],
      [{ restrictions: { ip_whitelist: ['10.0.0.0/40'] } }, 'restrictions.ip_whitelist'],
      [{ restrictions: { expires_at: '2001-01-01T00:00:00Z' } }, 'restrictions.expires_at'],
      [{ restrictions: { burst_limit: 0 } }, 'restrictions.burst_limit'],
      [{ restrictions: ['x'] }, 'restrictions'],
      [{ keyType: 'admin' }, 'keyType'],
      [{ domainScope: 'example.com' }, 'domainScope'],
    ])('refuses %j with 400 naming %s, changing nothing', async (body, field) => {
      const { keyId } = await createKey(t, owner.adminKey, { keyType: 'usage', name: 'unchanged' });
      const res = await patch(owner.adminKey, keyId, { name: 'changed', ...body });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
      expect((await listed(owner.adminKey, keyId)).name).toBe('unchanged');
    });

    it('keeps a public key’s domain and changes what it may change', async () => {
      const { keyId } = await createKey(t, owner.adminKey, { keyType: 'public', domainScope: 'example.com' });
      const res = await patch(owner.adminKey, keyId, { rateLimit: 50, restrictions: { burst_limit: 5 } }).expect(200);
      expect(res.body).toMatchObject({ keyType: 'public', domainScope: 'example.com', permissions: ['forms.send'], rateLimit: 50 });
    });

    it('shows another account’s key, and an unknown one, as 404', async () => {
      const other = await account();
      const { keyId } = await createKey(t, owner.adminKey, { keyType: 'usage', name: 'mine' });
      const res = await patch(other.adminKey, keyId, { name: 'theirs' });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      await patch(owner.adminKey, 'key_doesnotexist', { name: 'x' }).expect(404);
      expect((await listed(owner.adminKey, keyId)).name).toBe('mine');
    });

    it('is for admin keys holding keys.manage', async () => {
      const { key, keyId } = await createKey(t, owner.adminKey, { keyType: 'usage' });
      expect((await patch(key, keyId, { rateLimit: 1 })).status).toBe(403);
      const noManage = await createKey(t, owner.adminKey, { keyType: 'admin', permissions: ['email.send'] });
      expect((await patch(noManage.key, keyId, { rateLimit: 1 })).status).toBe(403);
    });
  });

  describe('BOOTSTRAP_ADMIN_KEY', () => {
    it('has no hourly limit of its own, and once deleted is not adopted again at the next start; a new secret is', async () => {
      const operatorKeys = async (app: TestApp) =>
        (await app.http.get('/api-keys').set(bearer(t.operatorKey)).expect(200)).body.apiKeys as {
          keyId: string;
          name: string;
          rateLimit: number | null;
        }[];
      const bootstrap = (await operatorKeys(t)).find((k) => k.name === 'Bootstrap admin key')!;
      expect(bootstrap.rateLimit).toBeNull();
      expect((await operatorKeys(t)).find((k) => k.name === 'Operator admin key')!.rateLimit).toBeNull();
      await t.http.get('/auth/whoami').set(bearer(BOOTSTRAP_KEY)).expect(200);

      await t.http.delete(`/api-keys/${bootstrap.keyId}`).set(bearer(t.operatorKey)).expect(200);
      await t.http.get('/auth/whoami').set(bearer(BOOTSTRAP_KEY)).expect(401);

      // A start with the same BOOTSTRAP_ADMIN_KEY on the same database: the key stays deleted.
      const restarted = await createTestApp({ shareWith: t });
      try {
        await restarted.http.get('/auth/whoami').set(bearer(BOOTSTRAP_KEY)).expect(401);
        expect((await operatorKeys(restarted)).some((k) => k.name === 'Bootstrap admin key')).toBe(false);
      } finally {
        await restarted.close();
      }

      // A new secret in the variable is adopted (once).
      const renewed = await createTestApp({ shareWith: t, env: { BOOTSTRAP_ADMIN_KEY: NEXT_BOOTSTRAP_KEY } });
      try {
        const who = await renewed.http.get('/auth/whoami').set(bearer(NEXT_BOOTSTRAP_KEY)).expect(200);
        expect(who.body.accountId).toBe((await t.http.get('/auth/whoami').set(bearer(t.operatorKey))).body.accountId);
        await renewed.http.get('/auth/whoami').set(bearer(BOOTSTRAP_KEY)).expect(401);
        expect((await operatorKeys(renewed)).filter((k) => k.name === 'Bootstrap admin key')).toHaveLength(1);
      } finally {
        await renewed.close();
      }
    });
  });
});

/**
 * The migration on a database as it was before it: it lifts the default limit of the keys no other key made
 * and records the bootstrap key, and leaves every key made by another key as it was.
 */
describe('migration AddKeysWithoutHourlyLimit', () => {
  let name: string;
  let dataSource: DataSource;
  let runner: QueryRunner;
  const migration = new AddKeysWithoutHourlyLimit1795700003000();

  beforeAll(async () => {
    name = await cloneTemplateDatabase();
    dataSource = new DataSource(databaseOptions(databaseUrl(name)));
    await dataSource.initialize();
    runner = dataSource.createQueryRunner();
    await migration.down(runner);
  });
  afterAll(async () => {
    await runner?.release();
    await dataSource?.destroy();
    await dropDatabase(name);
  });

  const hour = 3_600_000;
  async function accountAt(id: string, createdAt: Date, isOperator = false): Promise<void> {
    await runner.query(`INSERT INTO accounts (id, name, tier, is_operator, created_at) VALUES ($1, $1, 'free', $2, $3)`, [
      id,
      isOperator,
      createdAt,
    ]);
  }
  async function keyAt(
    id: string,
    accountId: string,
    name: string,
    createdAt: Date,
    more: { rateLimit?: number; restrictions?: object; keyType?: string } = {},
  ) {
    await runner.query(
      `INSERT INTO api_keys (id, account_id, name, key_type, key_hash, key_preview, permissions, rate_limit, restrictions, created_at)
       VALUES ($1, $2, $3, $4, $8, 'p', '{email.send}', $5, $6, $7)`,
      [id, accountId, name, more.keyType ?? 'admin', more.rateLimit ?? 1000, more.restrictions ?? {}, createdAt, hashKey(id)],
    );
  }

  it('sets no own hourly limit on first admin keys and the operator’s keys only', async () => {
    const t0 = new Date(Date.now() - 10 * hour);
    const later = (ms: number) => new Date(t0.getTime() + ms);
    await accountAt('acc_a', t0);
    await keyAt('key_a_first', 'acc_a', 'First admin key', later(5));
    await keyAt('key_a_made', 'acc_a', 'First admin key', later(60_000));
    await keyAt('key_a_usage', 'acc_a', 'Backend', later(70_000), { keyType: 'usage' });
    // The first key deleted: the oldest admin key left was made by it, even if named alike.
    await accountAt('acc_b', t0);
    await keyAt('key_b_made', 'acc_b', 'First admin key', later(2 * hour));
    // A first key narrowed by hand keeps what it was given.
    await accountAt('acc_c', t0);
    await keyAt('key_c_first', 'acc_c', 'First admin key', later(5), { rateLimit: 5000 });
    await accountAt('acc_d', t0);
    await keyAt('key_d_first', 'acc_d', 'First admin key', later(5), { restrictions: { burst_limit: 3 } });
    await accountAt('acc_op', t0, true);
    await keyAt('key_op_boot', 'acc_op', 'Bootstrap admin key', later(5));
    await keyAt('key_op_cli', 'acc_op', 'Operator admin key', later(hour));
    await keyAt('key_op_made', 'acc_op', 'Ops dashboard', later(2 * hour));

    await migration.up(runner);

    const rows: { id: string; rate_limit: number | null }[] = await runner.query(`SELECT id, rate_limit FROM api_keys ORDER BY id`);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.rate_limit]))).toEqual({
      key_a_first: null,
      key_a_made: 1000,
      key_a_usage: 1000,
      key_b_made: 1000,
      key_c_first: 5000,
      key_d_first: 1000,
      key_op_boot: null,
      key_op_cli: null,
      key_op_made: 1000,
    });
    const adopted: { key_hash: string }[] = await runner.query(`SELECT key_hash FROM adopted_bootstrap_keys`);
    const [boot] = await runner.query(`SELECT key_hash FROM api_keys WHERE id = 'key_op_boot'`);
    expect(adopted.map((a) => a.key_hash)).toEqual([boot.key_hash]);
  });
});
