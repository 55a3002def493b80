import { createPublicKey, sign, verify } from 'node:crypto';
import { promises as dns } from 'node:dns';
import { dkimVerify } from 'mailauth';
import { createTransport } from 'nodemailer';
import { DataSource } from 'typeorm';
import { DomainsService } from '../../src/domains/domains.service';
import { startDnsServer, TestDnsServer } from '../support/dns-server';
import { bearer, createAccount, createKey } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

type Rec = { purpose: string; name: string; value: string };
const recordOf = (body: { dnsRecords: Rec[] }, purpose: string): Rec => body.dnsRecords.find((r) => r.purpose === purpose)!;

describe('domains', () => {
  let t: TestApp;
  let dnsServer: TestDnsServer;
  let accountA: string;
  let adminA: string;
  let adminB: string;
  let usageA: string;
  let publicA: string;

  const addDomain = async (key: string, domain: string) => {
    const res = await t.http.post('/domains').set(bearer(key)).send({ domain });
    expect(res.status).toBe(201);
    return res.body;
  };
  const verifyDomain = (key: string, domain: string) => t.http.post('/domains/verify').set(bearer(key)).send({ domain });
  /** Publishes the domain's verification record, next to an unrelated TXT record as real zones have. */
  const publishToken = (domain: { domain: string; verificationRecord: string }) =>
    dnsServer.setTxt(domain.domain, 'v=spf1 -all', domain.verificationRecord);

  beforeAll(async () => {
    dnsServer = await startDnsServer();
    t = await createTestApp({ env: { DNS_SERVERS: dnsServer.address } });
    ({ accountId: accountA, adminKey: adminA } = await createAccount(t, 'Tenant A'));
    ({ adminKey: adminB } = await createAccount(t, 'Tenant B'));
    ({ key: usageA } = await createKey(t, adminA, { keyType: 'usage' }));
    ({ key: publicA } = await createKey(t, adminA, { keyType: 'public', domainScope: 'matrix.test' }));
  });
  afterAll(async () => {
    await t.close();
    await dnsServer.close();
  });

  it('adds a pending domain with its token and the DNS records to publish, never the private key', async () => {
    const body = await addDomain(adminA, '  Shop.Example.TEST. ');
    expect(body).toMatchObject({ domain: 'shop.example.test', status: 'pending', verifiedAt: null, lastCheckError: null });
    expect(body.id).toMatch(/^dom_/);
    expect(body.verificationToken).toMatch(/^[0-9a-f]{32}$/);
    expect(body.verificationRecord).toBe(`svc-verification=${body.verificationToken}`);
    expect(body.dkimSelector).toMatch(/^mr\d{6}$/);
    expect(body.dnsRecords).toEqual([
      { purpose: 'verification', type: 'TXT', name: 'shop.example.test', value: body.verificationRecord, required: true },
      {
        purpose: 'dkim',
        type: 'TXT',
        name: `${body.dkimSelector}._domainkey.shop.example.test`,
        value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/),
        required: true,
      },
      { purpose: 'spf', type: 'TXT', name: 'shop.example.test', value: 'v=spf1 a:mailroom.test ~all', required: false },
      { purpose: 'dmarc', type: 'TXT', name: '_dmarc.shop.example.test', value: 'v=DMARC1; p=none; adkim=r; aspf=r', required: false },
    ]);
    expect(Date.parse(body.verificationDeadline) - Date.parse(body.createdAt)).toBe(72 * 3600 * 1000);
    expect(JSON.stringify(body)).not.toMatch(/PRIVATE|dkimPrivateKey|v1\./);

    const list = await t.http.get('/domains').set(bearer(adminA)).expect(200);
    expect(list.body.count).toBe(list.body.domains.length);
    expect(list.body.domains.map((d: { domain: string }) => d.domain)).toContain('shop.example.test');
    const one = await t.http.get('/domains/SHOP.example.test').set(bearer(adminA)).expect(200);
    expect(one.body).toEqual(body);
  });

  it('stays pending while the TXT record is missing or holds another token, and says why', async () => {
    const domain = await addDomain(adminA, 'wrong-token.test');
    let res = await verifyDomain(adminA, 'wrong-token.test').expect(200);
    expect(res.body.status).toBe('pending');
    expect(res.body.lastCheckError).toBe('No TXT record found at wrong-token.test');
    expect(res.body.lastCheckedAt).not.toBeNull();

    dnsServer.setTxt('wrong-token.test', 'svc-verification=0123456789abcdef0123456789abcdef');
    res = await verifyDomain(adminA, 'wrong-token.test').expect(200);
    expect(res.body.status).toBe('pending');
    expect(res.body.lastCheckError).toMatch(/holds another token/);

    dnsServer.setTxt('wrong-token.test', `${domain.verificationRecord}x`);
    res = await verifyDomain(adminA, 'wrong-token.test').expect(200);
    expect(res.body.status).toBe('pending');
  });

  it('moves pending → verified once the TXT record is published, and stays verified', async () => {
    const domain = await addDomain(adminA, 'verify-me.test');
    publishToken(domain);
    const res = await verifyDomain(adminA, 'verify-me.test').expect(200);
    expect(res.body).toMatchObject({ domain: 'verify-me.test', status: 'verified', lastCheckError: null, verificationDeadline: null });
    expect(Date.parse(res.body.verifiedAt)).toBeGreaterThan(Date.now() - 60_000);

    dnsServer.removeTxt('verify-me.test');
    const again = await verifyDomain(adminA, 'verify-me.test').expect(200);
    expect(again.body.status).toBe('verified');
    const service = t.app.get(DomainsService);
    expect((await service.findVerified(accountA, 'Verify-Me.test'))?.name).toBe('verify-me.test');
    expect((await service.findVerifiedByName('verify-me.test'))?.accountId).toBe(accountA);
    expect(await service.findVerifiedByName('wrong-token.test')).toBeNull();
  });

  it('publishes a DKIM public key that verifies signatures made with the stored private key', async () => {
    const domain = await addDomain(adminA, 'dkim.test');
    publishToken(domain);
    await verifyDomain(adminA, 'dkim.test').expect(200);

    // At rest the private key is sealed (AES-256-GCM), not a PEM.
    const [row] = await t.app.get(DataSource).query(`SELECT dkim_private_key FROM domains WHERE name = 'dkim.test'`);
    expect(row.dkim_private_key).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);

    const service = t.app.get(DomainsService);
    const stored = await service.findVerified(accountA, 'dkim.test');
    const signingKey = service.signingKey(stored!);
    expect(signingKey).toMatchObject({ domainName: 'dkim.test', keySelector: domain.dkimSelector });

    const dkim = recordOf(domain, 'dkim');
    const p = /p=([A-Za-z0-9+/=]+)$/.exec(dkim.value)![1];
    const publicKey = createPublicKey({ key: Buffer.from(p, 'base64'), format: 'der', type: 'spki' });
    expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const data = Buffer.from('a message to sign');
    const signature = sign('sha256', data, signingKey.privateKey);
    expect(verify('sha256', data, publicKey, signature)).toBe(true);
    expect(verify('sha256', Buffer.from('another message'), publicKey, signature)).toBe(false);

    // A whole email signed by nodemailer with that key passes a DKIM check against the published record.
    const transport = createTransport({ streamTransport: true, buffer: true, dkim: signingKey });
    const sent = await transport.sendMail({ from: 'hello@dkim.test', to: 'someone@example.net', subject: 'Hi', text: 'Signed.' });
    dnsServer.setTxt(dkim.name, dkim.value);
    const resolver = new dns.Resolver();
    resolver.setServers([dnsServer.address]);
    const result = await dkimVerify(sent.message, { resolver: (name, rr) => resolver.resolve(name, rr) as Promise<string[][]> });
    expect(result.results.map((r) => [r.signingDomain, r.status.result])).toEqual([['dkim.test', 'pass']]);
  });

  it('answers 409 for a domain already in the account or verified by another account, 404 across accounts', async () => {
    const domain = await addDomain(adminA, 'shared.test');
    await t.http.post('/domains').set(bearer(adminA)).send({ domain: 'SHARED.test' }).expect(409);
    publishToken(domain);
    await verifyDomain(adminA, 'shared.test').expect(200);

    const taken = await t.http.post('/domains').set(bearer(adminB)).send({ domain: 'shared.test' }).expect(409);
    expect(taken.body.error).toMatchObject({ code: 'CONFLICT', message: 'The domain shared.test is verified by another account' });
    await t.http.get('/domains/shared.test').set(bearer(adminB)).expect(404);
    await t.http
      .put('/domains/shared.test')
      .set(bearer(adminB))
      .send({ contactRecipients: ['x@example.net'] })
      .expect(404);
    await t.http.delete('/domains/shared.test').set(bearer(adminB)).expect(404);
    const notFound = await verifyDomain(adminB, 'shared.test').expect(404);
    expect(notFound.body.error.code).toBe('NOT_FOUND');
    const listB = await t.http.get('/domains').set(bearer(adminB)).expect(200);
    expect(listB.body).toEqual({ domains: [], count: 0 });
    await t.http.get('/domains/shared.test').set(bearer(adminA)).expect(200);
  });

  it('lets only the first of two accounts verify a domain both added', async () => {
    const a = await addDomain(adminA, 'race.test');
    const b = await addDomain(adminB, 'race.test');
    dnsServer.setTxt('race.test', a.verificationRecord, b.verificationRecord);
    expect((await verifyDomain(adminB, 'race.test').expect(200)).body.status).toBe('verified');
    const lost = await verifyDomain(adminA, 'race.test').expect(409);
    expect(lost.body.error.code).toBe('CONFLICT');
    expect((await t.http.get('/domains/race.test').set(bearer(adminA)).expect(200)).body.status).toBe('pending');
  });

  it.each([['not a domain'], ['localhost'], ['10.0.0.1'], ['-x.test'], ['x..test'], ['mail@example.test'], [''], [42], [null]])(
    'refuses the domain name %j with 400',
    async (domain) => {
      const res = await t.http.post('/domains').set(bearer(adminA)).send({ domain }).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.fields[0].field).toBe('domain');
    },
  );

  it('refuses a missing domain and unknown fields with 400', async () => {
    const res = await t.http.post('/domains').set(bearer(adminA)).send({ name: 'x.test' }).expect(400);
    expect(new Set(res.body.error.details.fields.map((f: { field: string }) => f.field))).toEqual(new Set(['domain', 'name']));
    await t.http.post('/domains/verify').set(bearer(adminA)).send({}).expect(400);
  });

  it('turns a domain still unverified 72 h after creation into failed, and still lets it verify', async () => {
    const late = await addDomain(adminA, 'late.test');
    await addDomain(adminA, 'later.test');
    await t.app
      .get(DataSource)
      .query(`UPDATE domains SET created_at = now() - interval '73 hours' WHERE name IN ('late.test', 'later.test')`);

    const read = await t.http.get('/domains/late.test').set(bearer(adminA)).expect(200);
    expect(read.body.status).toBe('failed');
    expect(Date.parse(read.body.verificationDeadline)).toBeLessThan(Date.now());
    const list = await t.http.get('/domains').set(bearer(adminA)).expect(200);
    expect(list.body.domains.find((d: { domain: string }) => d.domain === 'later.test').status).toBe('failed');

    const stillFailed = await verifyDomain(adminA, 'later.test').expect(200);
    expect(stillFailed.body).toMatchObject({ status: 'failed', lastCheckError: 'No TXT record found at later.test' });

    publishToken(late);
    const verified = await verifyDomain(adminA, 'late.test').expect(200);
    expect(verified.body.status).toBe('verified');
  });

  describe('settings', () => {
    beforeAll(async () => {
      await addDomain(adminA, 'settings.test');
    });

    it('stores contact recipients, forwarding rules and forms, section by section', async () => {
      const res = await t.http
        .put('/domains/settings.test')
        .set(bearer(adminA))
        .send({
          contactRecipients: ['team@example.net', 'boss@example.net'],
          forwarding: { Info: 'owner@example.net', '*': ['catchall@example.net'] },
          forms: {
            contact: {
              to: 'sales@example.net',
              subject: 'New lead',
              replies: true,
              acknowledgment: { enabled: true, template: 'thanks', subject: 'We got it' },
              spam_protection: { level: 'medium', honeypot: '_gotcha', rate_limit: 5, content_filter: true },
              rateLimit: 10,
              allowedOrigins: ['https://www.example.org'],
              redirect: 'https://settings.test/thanks',
            },
            newsletter: {},
          },
        })
        .expect(200);
      expect(res.body.settings).toEqual({
        contactRecipients: ['team@example.net', 'boss@example.net'],
        forwarding: { info: ['owner@example.net'], '*': ['catchall@example.net'] },
        forms: {
          contact: {
            recipients: ['sales@example.net'],
            subject: 'New lead',
            replies: true,
            acknowledgment: { enabled: true, template: 'thanks', subject: 'We got it' },
            spam_protection: { level: 'medium', honeypot: '_gotcha', rate_limit: 5, content_filter: true },
            rateLimit: 10,
            allowedOrigins: ['https://www.example.org'],
            redirect: 'https://settings.test/thanks',
          },
          newsletter: {},
        },
      });

      // A section left out is kept; null removes one.
      const next = await t.http
        .put('/domains/settings.test')
        .set(bearer(adminA))
        .send({ contactRecipients: 'only@example.net', forms: null })
        .expect(200);
      expect(next.body.settings).toEqual({
        contactRecipients: ['only@example.net'],
        forwarding: { info: ['owner@example.net'], '*': ['catchall@example.net'] },
      });
      const read = await t.http.get('/domains/settings.test').set(bearer(adminA)).expect(200);
      expect(read.body.settings).toEqual(next.body.settings);
    });

    it('answers 400 naming each bad path, and changes nothing', async () => {
      const before = (await t.http.get('/domains/settings.test').set(bearer(adminA)).expect(200)).body.settings;
      const res = await t.http
        .put('/domains/settings.test')
        .set(bearer(adminA))
        .send({
          contactRecipients: ['team@example.net', 'nope'],
          forwarding: { 'two words': 'x@example.net', ok: [] },
          forms: { send: { to: 'a@example.net' }, contact: { subject: 'a\nb', acknowledgment: { enabled: 1 }, typo: true } },
        })
        .expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(
        [
          'contactRecipients[1]',
          'forms.contact.acknowledgment.enabled',
          'forms.contact.subject',
          'forms.contact.typo',
          'forms.send',
          'forwarding.ok',
          'forwarding.two words',
        ].sort(),
      );
      await t.http.put('/domains/settings.test').set(bearer(adminA)).send({ colour: 'blue' }).expect(400);
      const after = (await t.http.get('/domains/settings.test').set(bearer(adminA)).expect(200)).body.settings;
      expect(after).toEqual(before);
    });
  });

  it('deletes a domain', async () => {
    await addDomain(adminA, 'gone.test');
    const res = await t.http.delete('/domains/gone.test').set(bearer(adminA)).expect(200);
    expect(res.body).toEqual({ success: true, message: 'Domain gone.test deleted' });
    await t.http.get('/domains/gone.test').set(bearer(adminA)).expect(404);
    await t.http.delete('/domains/gone.test').set(bearer(adminA)).expect(404);
  });

  it('documents every route in the OpenAPI document', async () => {
    const { body } = await t.http.get('/docs-json').expect(200);
    expect(Object.keys(body.paths['/domains']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(body.paths['/domains/{domain}']).sort()).toEqual(['delete', 'get', 'put']);
    expect(Object.keys(body.paths['/domains/verify'])).toEqual(['post']);
    expect(Object.keys(body.paths['/projects']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(body.paths['/collections']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(body.paths['/collections/{slug}/forms/{formSlug}'])).toEqual(['get']);
    expect(body.components.schemas.DomainDto.properties.dnsRecords).toBeDefined();
    expect(body.components.schemas.FormSettingsDto.properties.spam_protection).toBeDefined();
  });

  it('lets forms take posts from a domain as soon as it is verified and refuses them once it is deleted, on every instance', async () => {
    const second = await createTestApp({ shareWith: t });
    try {
      const domain = await addDomain(adminA, 'posting.test');
      const form = await t.http
        .post('/api/forms')
        .set(bearer(adminA))
        .send({ name: 'Contact', to: 'owner@example.org', rateLimit: 1000 })
        .expect(201);
      const post = (app: TestApp) =>
        app.http
          .post(`/f/${form.body.id}`)
          .set({ Accept: 'application/json', Origin: 'https://www.posting.test' })
          .send({ email: 'ann@example.org', message: 'hello' });
      // Both instances have now looked the account's verified domains up (none) and keep the answer for 10 s.
      for (const app of [t, second]) {
        const refused = await post(app);
        expect([refused.status, refused.body.error?.code]).toEqual([403, 'ORIGIN_NOT_ALLOWED']);
      }

      publishToken(domain);
      await verifyDomain(adminA, 'posting.test').expect(200);
      expect((await post(t)).status).toBe(200);
      // The other instance is told over Redis: well within a second, not when its 10 s cache expires. The wait is a
      // bound, not a speed assertion: without the invalidation the answer it cached just above holds for 10 s, and
      // this gives up after 2.
      await waitFor(
        'a post to the second instance accepted',
        async () => (await post(second)).status,
        (status) => status === 200,
        2000,
      );

      await t.http.delete('/domains/posting.test').set(bearer(adminA)).expect(200);
      const refused = await post(t);
      expect([refused.status, refused.body.error?.code]).toEqual([403, 'ORIGIN_NOT_ALLOWED']);
      // As above: the second instance cached the domain with the post it accepted last, for 10 s.
      await waitFor(
        'a post to the second instance refused',
        async () => (await post(second)).status,
        (status) => status === 403,
        2000,
      );
    } finally {
      await second.close();
    }
  });
  describe('access', () => {
    const routes: { method: 'get' | 'post' | 'put' | 'delete'; path: string; body?: Record<string, unknown> }[] = [
      { method: 'get', path: '/domains' },
      { method: 'post', path: '/domains', body: { domain: 'matrix.test' } },
      { method: 'get', path: '/domains/matrix.test' },
      { method: 'put', path: '/domains/matrix.test', body: { contactRecipients: ['a@example.net'] } },
      { method: 'post', path: '/domains/verify', body: { domain: 'matrix.test' } },
      { method: 'delete', path: '/domains/matrix.test' },
    ];
    const call = ({ method, path, body }: (typeof routes)[number]) => {
      const req = t.http[method](path);
      return body ? req.send(body) : req;
    };

    it.each(routes)('$method $path: 401 without a key, 403 for usage and public keys', async (route) => {
      const none = await call(route);
      expect(none.status).toBe(401);
      expect(none.body.error.code).toBe('AUTH_MISSING');
      expect((await call(route).set(bearer(usageA))).status).toBe(403);
      expect((await call(route).set('X-Public-Token', publicA)).status).toBe(403);
    });

    it('admin keys reach every route, within their permissions', async () => {
      for (const route of routes) {
        const res = await call(route).set(bearer(adminA));
        expect([route.method, route.path, res.status]).toEqual([
          route.method,
          route.path,
          route.method === 'post' && route.path === '/domains' ? 201 : 200,
        ]);
      }
      const { key: readOnly } = await createKey(t, adminA, { keyType: 'admin', permissions: ['domains.read'] });
      await t.http.get('/domains').set(bearer(readOnly)).expect(200);
      await t.http.post('/domains').set(bearer(readOnly)).send({ domain: 'ro.test' }).expect(403);
      await t.http.post('/domains/verify').set(bearer(readOnly)).send({ domain: 'matrix.test' }).expect(403);
    });
  });
});
