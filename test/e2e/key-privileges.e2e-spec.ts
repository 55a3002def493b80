import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * A key never creates a key wider than itself (issue 9): an admin key held to some permissions, an IP
 * allowlist, domains, an expiry and limits makes only keys within them, on POST /api-keys and POST /auth/keys.
 */
describe('key privileges: a new key is never wider than the key that creates it', () => {
  let t: TestApp;
  /** An account's full admin key, and a narrow admin key of the same account. */
  let fullKey: string;
  let narrowKey: string;
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  const narrowRestrictions = {
    ip_whitelist: ['127.0.0.0/8', '::1'],
    domain_restrictions: ['example.com'],
    expires_at: expiresAt,
    rate_limit: 500,
    burst_limit: 30,
  };

  beforeAll(async () => {
    t = await createTestApp();
    ({ adminKey: fullKey } = await createAccount(t, 'Acme'));
    ({ key: narrowKey } = await createKey(t, fullKey, {
      keyType: 'admin',
      permissions: ['keys.manage', 'email.send', 'templates.read'],
      restrictions: narrowRestrictions,
    }));
  });
  afterAll(() => t.close());

  const create = (body: Record<string, unknown>, path = '/api-keys') =>
    t.http
      .post(path)
      .set(bearer(narrowKey))
      .send({ name: 'made by a narrow key', ...body });

  function expectForbidden(res: { status: number; body: any }, field: string, message: RegExp) {
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: {
        code: 'FORBIDDEN',
        message: expect.stringMatching(/^A key cannot create a key wider than itself: /),
        details: { fields: expect.arrayContaining([{ field, message: expect.stringMatching(message) }]) },
      },
      documentation: 'http://mailroom.test/docs#errors',
    });
    expect(res.body.error.message).toContain(field);
  }

  it('refuses permissions the creating key does not hold, naming them', async () => {
    const res = await create({ keyType: 'admin', permissions: ['email.send', 'domains.write', 'keys.manage'] });
    expectForbidden(res, 'permissions', /does not hold domains\.write$/);
  });

  it.each([
    ['an IP range outside its allowlist', { ip_whitelist: ['0.0.0.0/0'] }, 'restrictions.ip_whitelist', /0\.0\.0\.0\/0 not within/],
    ['a wider IPv6 range', { ip_whitelist: ['::/0'] }, 'restrictions.ip_whitelist', /::\/0 not within/],
    ['no IP allowlist at all', { ip_whitelist: [] }, 'restrictions.ip_whitelist', /limited to 127\.0\.0\.0\/8, ::1/],
    ['a domain outside its domains', { domain_restrictions: ['evil.net'] }, 'restrictions.domain_restrictions', /evil\.net not within/],
    ['a later expiry', { expires_at: '2099-01-01T00:00:00Z' }, 'restrictions.expires_at', /later than the creating key's expiry/],
    ['a higher hourly limit', { rate_limit: 501 }, 'restrictions.rate_limit', /hourly limit of 501 is above the creating key's 500/],
    ['a higher per-minute limit', { burst_limit: 31 }, 'restrictions.burst_limit', /per-minute limit of 31 is above the creating key's 30/],
    [
      'a multiplier that lifts its limits above',
      { multiplier: 2 },
      'restrictions.burst_limit',
      /60 \(with multiplier 2\) is above the creating key's 30/,
    ],
    ['exemption from limits', { exempt: true }, 'restrictions.exempt', /not exempt/],
  ])('refuses %s with 403', async (_what, restrictions, field, message) => {
    expectForbidden(await create({ keyType: 'usage', permissions: ['email.send'], restrictions }), field, message);
  });

  it('refuses a higher rateLimit and a public key for a domain outside its domains', async () => {
    expectForbidden(
      await create({ keyType: 'usage', rateLimit: 1000 }),
      'rateLimit',
      /hourly limit of 1000 is above the creating key's 500/,
    );
    expectForbidden(await create({ keyType: 'public', domainScope: 'other.org' }), 'domainScope', /other\.org is not within/);
  });

  it('gives a key that leaves restrictions out the creating key’s, and only permissions it holds', async () => {
    const res = await create({ keyType: 'usage' }).expect(201);
    expect(res.body.apiKey).toMatchObject({
      keyType: 'usage',
      permissions: ['email.send', 'templates.read'],
      rateLimit: 500,
      restrictions: {
        ip_whitelist: ['127.0.0.0/8', '::1'],
        domain_restrictions: ['example.com'],
        expires_at: expiresAt,
        burst_limit: 30,
      },
      expiresAt,
    });
    // The new key works (from 127.0.0.1, inside the inherited allowlist).
    await t.http.get('/auth/whoami').set(bearer(res.body.apiKey.key)).expect(200);
  });

  it('makes keys narrower than itself as asked', async () => {
    const restrictions = {
      ip_whitelist: ['127.0.0.1'],
      domain_restrictions: ['mail.example.com'],
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      rate_limit: 100,
      burst_limit: 10,
    };
    const res = await create({ keyType: 'admin', permissions: ['email.send'], restrictions }).expect(201);
    expect(res.body.apiKey).toMatchObject({ keyType: 'admin', permissions: ['email.send'], restrictions });
    const scoped = await create({ keyType: 'public', domainScope: 'shop.example.com' }).expect(201);
    expect(scoped.body.apiKey).toMatchObject({ permissions: [], domainScope: 'shop.example.com' });
  });

  it('applies the same bounds to POST /auth/keys', async () => {
    expectForbidden(await create({ permissions: ['domains.read'] }, '/auth/keys'), 'permissions', /domains\.read/);
    const res = await create({ permissions: ['templates.read'] }, '/auth/keys').expect(201);
    expect(res.body.apiKey).toMatchObject({
      keyType: 'usage',
      permissions: ['templates.read'],
      restrictions: { ip_whitelist: ['127.0.0.0/8', '::1'], expires_at: expiresAt, burst_limit: 30 },
    });
  });

  it('lets an unrestricted admin key create any key within its own limits, but not an exempt one', async () => {
    const res = await t.http
      .post('/api-keys')
      .set(bearer(fullKey))
      .send({
        name: 'wide',
        keyType: 'admin',
        restrictions: { ip_whitelist: ['0.0.0.0/0', '::/0'], expires_at: '2099-01-01T00:00:00Z', burst_limit: 1_000_000 },
      })
      .expect(201);
    expect(res.body.apiKey.permissions).toContain('domains.write');
    const exempt = await t.http
      .post('/api-keys')
      .set(bearer(fullKey))
      .send({ name: 'x', keyType: 'usage', restrictions: { exempt: true } });
    expectForbidden(exempt, 'restrictions.exempt', /not exempt/);
  });
});
