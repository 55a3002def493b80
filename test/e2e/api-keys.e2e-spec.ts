import { ApiKeyCache } from '../../src/auth/api-key.cache';
import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

const BOOTSTRAP_KEY = `svc_sk_admin_${'b0'.repeat(32)}`;

describe('API keys and authentication', () => {
  let t: TestApp;
  let adminKey: string;
  let usageKey: string;
  let publicKey: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { BOOTSTRAP_ADMIN_KEY: BOOTSTRAP_KEY } });
    ({ adminKey } = await createAccount(t, 'Acme'));
    usageKey = (await createKey(t, adminKey, { keyType: 'usage' })).key;
    publicKey = (await createKey(t, adminKey, { keyType: 'public', domainScope: 'example.com' })).key;
  });
  afterAll(() => t.close());

  describe('access matrix (spec "Endpoint access")', () => {
    // Every row has three cells: jest passes a `done` callback in place of a missing one.
    const routes: [string, string, Record<string, unknown> | undefined][] = [
      ['post', '/api-keys', { name: 'k', keyType: 'usage' }],
      ['get', '/api-keys', undefined],
      ['delete', '/api-keys/key_doesnotexist', undefined],
      ['patch', '/api-keys/key_doesnotexist', { name: 'k' }],
      ['post', '/auth/keys', { name: 'k', permissions: ['email.send'] }],
      ['post', '/admin/accounts', { name: 'Other' }],
      ['get', '/admin/accounts', undefined],
    ];

    it.each(routes)('%s %s: usage and public keys get 403, no credential 401', async (method, path, body) => {
      const call = (headers: Record<string, string>) =>
        (t.http as any)
          [method](path)
          .set(headers)
          .send(body ?? undefined);
      const noKey = await call({});
      expect(noKey.status).toBe(401);
      expect(noKey.body.error.code).toBe('AUTH_MISSING');
      for (const headers of [bearer(usageKey), { 'X-Public-Token': publicKey }]) {
        const res = await call(headers);
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe('FORBIDDEN');
      }
    });

    it.each(routes)('%s %s: an admin key of the operator account is let in', async (method, path, body) => {
      const res = await (t.http as any)
        [method](path)
        .set(bearer(t.operatorKey))
        .send(body ?? undefined);
      expect([200, 201, 404]).toContain(res.status);
      if (res.status === 404) expect(path).toBe('/api-keys/key_doesnotexist');
    });

    it('keeps /admin/* for the operator account: a tenant admin key gets 403', async () => {
      const res = await t.http.get('/admin/accounts').set(bearer(adminKey));
      expect(res.status).toBe(403);
      expect(res.body.error.message).toMatch(/operator/);
      await t.http.get('/api-keys').set(bearer(adminKey)).expect(200);
    });
  });

  describe('credentials', () => {
    it('reads a key from Authorization: Bearer, X-Api-Key and service-Api-Key', async () => {
      for (const headers of [bearer(adminKey), { 'X-Api-Key': adminKey }, { 'service-Api-Key': adminKey }]) {
        await t.http.get('/api-keys').set(headers).expect(200);
      }
    });

    it('answers 401 AUTH_INVALID_KEY for unknown, malformed and misplaced keys', async () => {
      const unknown = `svc_sk_admin_${'0'.repeat(64)}`;
      for (const headers of [bearer(unknown), bearer('nonsense'), { 'X-Public-Token': adminKey }]) {
        const res = await t.http.get('/api-keys').set(headers);
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe('AUTH_INVALID_KEY');
      }
    });

    it('turns a key away with 401 AUTH_KEY_EXPIRED once expires_at passes', async () => {
      const expiresAt = new Date(Date.now() + 1500).toISOString();
      const { key } = await createKey(t, adminKey, { keyType: 'admin', restrictions: { expires_at: expiresAt } });
      await t.http.get('/api-keys').set(bearer(key)).expect(200);
      await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 50));
      const res = await t.http.get('/api-keys').set(bearer(key));
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('AUTH_KEY_EXPIRED');
    });

    it('adopts BOOTSTRAP_ADMIN_KEY as an operator admin key', async () => {
      const res = await t.http.get('/admin/accounts').set(bearer(BOOTSTRAP_KEY)).expect(200);
      expect(res.body.accounts.some((a: { isOperator: boolean }) => a.isOperator)).toBe(true);
    });
  });

  describe('creating keys', () => {
    it('returns the spec’s creation response with the secret once', async () => {
      const res = await t.http.post('/api-keys').set(bearer(adminKey)).send({ name: 'Backend', keyType: 'usage' }).expect(201);
      expect(res.body).toEqual({
        success: true,
        apiKey: expect.objectContaining({
          keyId: expect.stringMatching(/^key_[0-9A-Za-z]{22}$/),
          name: 'Backend',
          keyType: 'usage',
          domainScope: null,
          rateLimit: 1000,
          key: expect.stringMatching(/^svc_sk_usage_[0-9a-f]{64}$/),
          createdAt: expect.any(String),
        }),
        message: expect.any(String),
        securityNote: expect.stringMatching(/only once/),
      });
      expect(res.body.apiKey.permissions).toContain('email.send');
      expect(res.body.apiKey.permissions).not.toContain('domains.write');
    });

    it('makes public keys scoped to one domain with forms.send and 100 requests an hour', async () => {
      const res = await t.http
        .post('/api-keys')
        .set(bearer(adminKey))
        .send({ name: 'Site', keyType: 'public', domainScope: 'Shop.Example.com' })
        .expect(201);
      expect(res.body.apiKey).toMatchObject({
        keyType: 'public',
        domainScope: 'shop.example.com',
        permissions: ['forms.send'],
        rateLimit: 100,
      });
      expect(res.body.apiKey.key).toMatch(/^svc_pk_[0-9a-f]{8}_[0-9a-f]{64}$/);
    });

    it('stores aliases in canonical form', async () => {
      const res = await t.http
        .post('/api-keys')
        .set(bearer(adminKey))
        .send({ name: 'k', keyType: 'admin', permissions: ['forms', 'domains', 'email.send'] })
        .expect(201);
      expect(res.body.apiKey.permissions).toEqual([
        'email.send',
        'forms.send',
        'forms.read',
        'forms.write',
        'domains.read',
        'domains.write',
      ]);
    });

    it.each([
      [{ name: 'k', keyType: 'public' }, 'domainScope'],
      [{ name: 'k', keyType: 'usage', domainScope: 'example.com' }, 'domainScope'],
      [{ name: 'k', keyType: 'usage', permissions: ['email.explode'] }, 'permissions'],
      [{ name: 'k', keyType: 'usage', permissions: ['domains.write'] }, 'permissions'],
      [{ name: 'k', keyType: 'public', domainScope: 'example.com', permissions: ['email.send'] }, 'permissions'],
      [{ name: 'k', keyType: 'root' }, 'keyType'],
      [{ keyType: 'usage' }, 'name'],
      [{ name: 'k', keyType: 'usage', restrictions: { ip_whitelist: ['10.0.0.0/40'] } }, 'restrictions.ip_whitelist'],
      [{ name: 'k', keyType: 'usage', restrictions: { expires_at: '2001-01-01T00:00:00Z' } }, 'restrictions.expires_at'],
      [{ name: 'k', keyType: 'usage', restrictions: { burst_limit: 0 } }, 'restrictions.burst_limit'],
      [{ name: 'k', keyType: 'usage', owner: 'me' }, 'owner'],
    ])('refuses %j with 400 naming %s', async (body, field) => {
      const res = await t.http.post('/api-keys').set(bearer(adminKey)).send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    });

    it('infers the key type from the permissions on POST /auth/keys', async () => {
      const usage = await t.http
        .post('/auth/keys')
        .set(bearer(adminKey))
        .send({ name: 'ci', permissions: ['email.send'] })
        .expect(201);
      expect(usage.body.apiKey).toMatchObject({ keyType: 'usage', permissions: ['email.send'] });
      const admin = await t.http
        .post('/auth/keys')
        .set(bearer(adminKey))
        .send({ name: 'ops', permissions: ['domains'] })
        .expect(201);
      expect(admin.body.apiKey).toMatchObject({ keyType: 'admin', permissions: ['domains.read', 'domains.write'] });
      expect(admin.body.apiKey.key).toMatch(/^svc_sk_admin_/);
    });

    it('lets a narrowed admin key do only what it holds', async () => {
      const { key } = await createKey(t, adminKey, { keyType: 'admin', permissions: ['email.send'] });
      const res = await t.http.get('/api-keys').set(bearer(key));
      expect(res.status).toBe(403);
      expect(res.body.error.message).toMatch(/keys\.manage/);
    });
  });

  describe('restrictions', () => {
    it('ip_whitelist: 403 IP_NOT_ALLOWED outside the list, through inside it', async () => {
      const outside = await createKey(t, adminKey, {
        keyType: 'admin',
        restrictions: { ip_whitelist: ['203.0.113.0/24', '2001:db8::/32'] },
      });
      const res = await t.http.get('/api-keys').set(bearer(outside.key));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('IP_NOT_ALLOWED');
      const inside = await createKey(t, adminKey, { keyType: 'admin', restrictions: { ip_whitelist: ['127.0.0.0/8', '::1'] } });
      await t.http.get('/api-keys').set(bearer(inside.key)).expect(200);
    });

    it('domain_restrictions: a foreign Origin or Referer gets 403 DOMAIN_NOT_ALLOWED', async () => {
      const { key } = await createKey(t, adminKey, { keyType: 'admin', restrictions: { domain_restrictions: ['Example.com'] } });
      const foreign = await t.http.get('/api-keys').set(bearer(key)).set('Origin', 'https://evil.net');
      expect(foreign.status).toBe(403);
      expect(foreign.body.error.code).toBe('DOMAIN_NOT_ALLOWED');
      const lookalike = await t.http.get('/api-keys').set(bearer(key)).set('Referer', 'https://example.com.evil.net/page');
      expect(lookalike.status).toBe(403);
      await t.http.get('/api-keys').set(bearer(key)).set('Origin', 'https://app.example.com').expect(200);
      await t.http.get('/api-keys').set(bearer(key)).expect(200);
    });

    it('keeps rate_limit, burst_limit and expires_at on the key', async () => {
      const restrictions = { rate_limit: 50, burst_limit: 5, expires_at: '2099-01-01T00:00:00.000Z' };
      const { keyId } = await createKey(t, adminKey, { keyType: 'usage', restrictions });
      const list = await t.http.get('/api-keys').set(bearer(adminKey)).expect(200);
      const listed = list.body.apiKeys.find((k: { keyId: string }) => k.keyId === keyId);
      expect(listed.restrictions).toEqual(restrictions);
      expect(listed.expiresAt).toBe(restrictions.expires_at);
    });
  });

  describe('listing', () => {
    it('never shows a secret or its hash, and records lastUsedAt', async () => {
      const created = await createKey(t, adminKey, { keyType: 'usage' });
      await t.http.get('/api-keys').set(bearer(created.key)).expect(403); // a use, even refused
      await t.app.get(ApiKeyCache).flushLastUsed();
      const res = await t.http.get('/api-keys').set(bearer(adminKey)).expect(200);
      const text = JSON.stringify(res.body);
      expect(text).not.toContain(created.key.slice(-64));
      expect(text).not.toContain(adminKey.slice(-64));
      expect(text).not.toMatch(/keyHash|key_hash|"key":/);
      const listed = res.body.apiKeys.find((k: { keyId: string }) => k.keyId === created.keyId);
      expect(listed.keyPreview).toBe(`svc_sk_usage_…${created.key.slice(-4)}`);
      expect(Date.parse(listed.lastUsedAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(res.body.count).toBe(res.body.apiKeys.length);
    });

    it('filters by keyType', async () => {
      const res = await t.http.get('/api-keys?keyType=public').set(bearer(adminKey)).expect(200);
      expect(res.body.count).toBeGreaterThan(0);
      expect(res.body.apiKeys.every((k: { keyType: string }) => k.keyType === 'public')).toBe(true);
    });
  });

  describe('tenancy', () => {
    it('shows another account’s keys as 404 and never lists them', async () => {
      const other = await createAccount(t, 'Other Co');
      const mine = await createKey(t, adminKey, { keyType: 'usage' });
      const del = await t.http.delete(`/api-keys/${mine.keyId}`).set(bearer(other.adminKey));
      expect(del.status).toBe(404);
      expect(del.body.error.code).toBe('NOT_FOUND');
      const list = await t.http.get('/api-keys').set(bearer(other.adminKey)).expect(200);
      expect(list.body.apiKeys.map((k: { keyId: string }) => k.keyId)).not.toContain(mine.keyId);
      await t.http.get('/api-keys').set(bearer(mine.key)).expect(403); // still alive
    });

    it('creates tenant accounts with a working first admin key (operator only)', async () => {
      const res = await t.http.post('/admin/accounts').set(bearer(t.operatorKey)).send({ name: 'Globex', tier: 'pro' }).expect(201);
      expect(res.body.account).toMatchObject({ id: expect.stringMatching(/^acc_/), name: 'Globex', tier: 'pro', isOperator: false });
      expect(res.body.apiKey.key).toMatch(/^svc_sk_admin_[0-9a-f]{64}$/);
      const keys = await t.http.get('/api-keys').set(bearer(res.body.apiKey.key)).expect(200);
      expect(keys.body.count).toBe(1);
    });
  });

  describe('deletion', () => {
    it('stops a deleted key at once on this instance and within a second on another one', async () => {
      const second = await createTestApp({ shareWith: t });
      try {
        const { key, keyId } = await createKey(t, adminKey, { keyType: 'admin' });
        await second.http.get('/api-keys').set(bearer(key)).expect(200); // now cached on the second instance
        const del = await t.http.delete(`/api-keys/${keyId}`).set(bearer(adminKey)).expect(200);
        expect(del.body.success).toBe(true);
        await t.http.get('/api-keys').set(bearer(key)).expect(401);
        const deadline = Date.now() + 1000;
        let status = 0;
        while (Date.now() < deadline) {
          status = (await second.http.get('/api-keys').set(bearer(key))).status;
          if (status === 401) break;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        expect(status).toBe(401);
        await t.http.delete(`/api-keys/${keyId}`).set(bearer(adminKey)).expect(404);
      } finally {
        await second.close();
      }
    });
  });
});
