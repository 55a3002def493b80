import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { runCli } from '../support/cli';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import {
  cloneTemplateDatabase,
  databaseUrl,
  dropDatabase,
  redisPrefixOfRun,
  shortRandom,
  TEST_REDIS_URL,
  testRunId,
} from '../support/test-env';

const mailroom = runCli;

/**
 * Turnstile and hCaptcha site secrets: sealed in forms.settings, never in a response, exported as `${NAME}` and
 * filled in by `mailroom push`, re-sealed by `reseal-secrets`; plain-text rows from before sealing keep working and
 * get sealed. Captcha tokens are checked by a stand-in for both siteverify APIs, which passes the token `good` with
 * one of the secrets below and records the secret each check sent.
 */
describe('CAPTCHA secrets', () => {
  const keyA = randomBytes(32).toString('hex');
  const keyB = randomBytes(32).toString('hex');
  const secret = () => `0x4AAAAAAA${randomBytes(12).toString('hex')}`;
  const [S1, S2, S3, H1, LEGACY1, LEGACY2] = [secret(), secret(), secret(), secret(), secret(), secret()];
  const ALL_SECRETS = [S1, S2, S3, H1, LEGACY1, LEGACY2];
  const domain = `${shortRandom()}.captcha.test`;
  const site = 'https://www.captcha-site.test';
  let databaseName: string;
  let redisPrefix: string;
  let sink: SmtpSink;
  let siteverify: Server;
  let siteverifyUrl: string;
  /** The secret each siteverify call was made with. */
  const checkedWith: string[] = [];
  let t: TestApp | undefined;
  let adminKey: string;
  let dir: string;

  async function start(keys: { ENCRYPTION_KEY: string; ENCRYPTION_KEY_PREVIOUS?: string }): Promise<TestApp> {
    await t?.close();
    t = await createTestApp({
      stores: { databaseUrl: databaseUrl(databaseName), redisUrl: TEST_REDIS_URL },
      env: {
        ENCRYPTION_KEY_PREVIOUS: '',
        ...keys,
        REDIS_KEY_PREFIX: redisPrefix,
        SMTP_URL: sink.url,
        DOMAIN_VERIFICATION: 'skip',
        TURNSTILE_VERIFY_URL: `${siteverifyUrl}/turnstile`,
        HCAPTCHA_VERIFY_URL: `${siteverifyUrl}/hcaptcha`,
      },
    });
    return t;
  }

  beforeAll(async () => {
    databaseName = await cloneTemplateDatabase();
    redisPrefix = `${redisPrefixOfRun(testRunId())}${shortRandom()}:`;
    sink = await startSmtpSink();
    siteverify = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const params = new URLSearchParams(body);
        checkedWith.push(params.get('secret') ?? '');
        const ok = ALL_SECRETS.includes(params.get('secret') ?? '') && params.get('response') === 'good';
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(ok ? { success: true } : { success: false, 'error-codes': ['invalid-input-response'] }));
      });
    });
    await new Promise<void>((resolve) => siteverify.listen(0, '127.0.0.1', resolve));
    siteverifyUrl = `http://127.0.0.1:${(siteverify.address() as AddressInfo).port}`;
    dir = await mkdtemp(join(tmpdir(), 'mailroom-captcha-'));
    await start({ ENCRYPTION_KEY: keyA });
    ({ adminKey } = await createAccount(t!, 'Captcha'));
  });

  afterAll(async () => {
    await t?.close();
    await sink.close();
    await new Promise((resolve) => siteverify.close(resolve));
    await dropDatabase(databaseName);
    await rm(dir, { recursive: true, force: true });
  });

  const api = () => t!.http;
  const db = () => t!.app.get(DataSource);
  const storedSettings = async (id: string): Promise<string> =>
    (await db().query(`SELECT settings::text AS settings FROM forms WHERE id = $1`, [id]))[0].settings as string;
  const expectNoSecretIn = (text: string) => {
    for (const value of ALL_SECRETS) expect(text).not.toContain(value);
  };

  /** Posts to a form with a widget's token; answers the status and the secret the check was made with. */
  async function post(path: string, field: 'cf-turnstile-response' | 'h-captcha-response', origin: string, token = 'good') {
    const before = checkedWith.length;
    const res = await api()
      .post(path)
      .set({ Accept: 'application/json', Origin: origin })
      .send({ message: `hello ${shortRandom()}`, [field]: token });
    return { status: res.status, code: res.body?.error?.code as string | undefined, secret: checkedWith.slice(before).at(-1) };
  }
  const postStandalone = (id: string, token?: string) => post(`/f/${id}`, 'cf-turnstile-response', site, token);
  /** Posts find a form through a cache that keeps it up to 1 s (FormTargets): a change is seen after that. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 1100));

  let formId: string;
  let legacyId: string;

  describe('through /api/forms', () => {
    it('seals the secret given on create; no answer (create, read, list) carries it; the form checks tokens with it', async () => {
      const created = await api()
        .post('/api/forms')
        .set(bearer(adminKey))
        .send({
          name: 'Contact',
          to: 'team@example.org',
          allowedOrigins: [site],
          spam_protection: { challenge: 'turnstile', captcha_secret: S1 },
        })
        .expect(201);
      formId = created.body.id;
      expect(created.body.settings.spam_protection).toEqual({ challenge: 'turnstile', captcha_secret_set: true });
      const read = await api().get(`/api/forms/${formId}`).set(bearer(adminKey)).expect(200);
      expect(read.body.settings.spam_protection).toEqual({ challenge: 'turnstile', captcha_secret_set: true });
      const list = await api().get('/api/forms').set(bearer(adminKey)).expect(200);
      expect(list.body.forms.find((f: { id: string }) => f.id === formId).settings.spam_protection.captcha_secret_set).toBe(true);
      for (const res of [created, read, list]) expectNoSecretIn(res.text);

      const stored = await storedSettings(formId);
      expectNoSecretIn(stored);
      expect(JSON.parse(stored).spam_protection.captcha_secret).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);

      expect(await postStandalone(formId)).toEqual({ status: 200, code: undefined, secret: S1 });
      expect(await postStandalone(formId, 'forged')).toMatchObject({ status: 400, code: 'CHALLENGE_FAILED' });
    });

    it('keeps the stored secret when a change leaves it out, takes a new one, removes it on null', async () => {
      const patch = (body: Record<string, unknown>) => api().patch(`/api/forms/${formId}`).set(bearer(adminKey)).send(body);
      expectNoSecretIn((await patch({ subject: 'Changed' }).expect(200)).text);
      expect(await postStandalone(formId)).toMatchObject({ status: 200, secret: S1 });

      // What GET answered, sent back with another setting changed.
      const read = await api().get(`/api/forms/${formId}`).set(bearer(adminKey)).expect(200);
      await patch({ spam_protection: { ...read.body.settings.spam_protection, level: 'low' } }).expect(200);
      expect(await postStandalone(formId)).toMatchObject({ status: 200, secret: S1 });

      // The stored secret is Turnstile's: another provider needs its own.
      const other = await patch({ spam_protection: { challenge: 'hcaptcha' } }).expect(400);
      expect(other.body.error.details.fields).toEqual([
        { field: 'spam_protection.captcha_secret', message: 'the hcaptcha site secret is required with challenge hcaptcha' },
      ]);
      await patch({ spam_protection: { challenge: 'turnstile', captcha_secret: null } }).expect(400);

      const replaced = await patch({ spam_protection: { challenge: 'turnstile', captcha_secret: S2 } }).expect(200);
      expectNoSecretIn(replaced.text);
      expectNoSecretIn(await storedSettings(formId));
      await settle();
      expect(await postStandalone(formId)).toMatchObject({ status: 200, secret: S2 });

      const removed = await patch({ spam_protection: { challenge: 'altcha', captcha_secret: null } }).expect(200);
      expect(removed.body.settings.spam_protection).toEqual({ challenge: 'altcha' });
      expect(JSON.parse(await storedSettings(formId)).spam_protection).toEqual({ challenge: 'altcha' });
      await api()
        .patch(`/api/forms/${formId}`)
        .set(bearer(adminKey))
        .send({ spam_protection: { challenge: 'turnstile', captcha_secret: S2 } })
        .expect(200);
    });

    it('reads a secret stored in plain text before sealing, and answers it as set, never as it is', async () => {
      const created = await api()
        .post('/api/forms')
        .set(bearer(adminKey))
        .send({ name: 'Old', to: 'team@example.org', allowedOrigins: [site] })
        .expect(201);
      legacyId = created.body.id;
      await db().query(`UPDATE forms SET settings = jsonb_set(settings, '{spam_protection}', $2::jsonb) WHERE id = $1`, [
        legacyId,
        JSON.stringify({ challenge: 'turnstile', captcha_secret: LEGACY1 }),
      ]);
      expect(await postStandalone(legacyId)).toMatchObject({ status: 200, secret: LEGACY1 });
      const read = await api().get(`/api/forms/${legacyId}`).set(bearer(adminKey)).expect(200);
      expect(read.body.settings.spam_protection).toEqual({ challenge: 'turnstile', captcha_secret_set: true });
      expectNoSecretIn(read.text);
    });
  });

  describe('in the configuration file', () => {
    const origin = () => `https://${domain}`;
    const postContact = () => post(`/${domain}/contact`, 'cf-turnstile-response', origin());
    const file = () => join(dir, 'mailroom.yml');
    let cli: Record<string, string>;

    it('takes secrets in a pushed file, answering the plan without them; domain and collection reads show them as set', async () => {
      const pushed = await api()
        .put('/config')
        .set(bearer(adminKey))
        .send({
          domains: {
            [domain]: {
              forms: {
                contact: { to: 'team@example.org', spam_protection: { challenge: 'turnstile', captcha_secret: S1 } },
                quote: { to: 'team@example.org', spam_protection: { challenge: 'turnstile', captcha_secret: S1 } },
              },
            },
          },
          collections: {
            site: { forms: { news: { to: 'team@example.org', spam_protection: { challenge: 'hcaptcha', captcha_secret: H1 } } } },
          },
        })
        .expect(200);
      expectNoSecretIn(pushed.text);
      const contact = pushed.body.changes.find((c: { path: string }) => c.path === `domains.${domain}.forms.contact`);
      expect(contact.changes).toContainEqual({
        field: 'spam_protection',
        before: null,
        after: { challenge: 'turnstile', captcha_secret: '(secret)' },
      });

      const domainRead = await api().get(`/domains/${domain}`).set(bearer(adminKey)).expect(200);
      expect(domainRead.body.settings.forms.contact.spam_protection).toEqual({ challenge: 'turnstile', captcha_secret_set: true });
      const collectionForm = await api().get('/collections/site/forms/news').set(bearer(adminKey)).expect(200);
      expect(collectionForm.body.settings.spam_protection).toEqual({ challenge: 'hcaptcha', captcha_secret_set: true });
      const collections = await api().get('/collections').set(bearer(adminKey)).expect(200);
      for (const res of [domainRead, collectionForm, collections]) expectNoSecretIn(res.text);
      expect(await postContact()).toMatchObject({ status: 200, secret: S1 });
    });

    it('GET /config writes each secret as a ${NAME} reference, which PUT /config itself refuses', async () => {
      const exported = await api().get('/config').set(bearer(adminKey)).expect(200);
      expectNoSecretIn(exported.text);
      const forms = exported.body.domains[domain].forms;
      expect(forms.contact.spam_protection).toEqual({ challenge: 'turnstile', captcha_secret: '${TURNSTILE_SECRET}' });
      expect(forms.quote.spam_protection.captcha_secret).toBe('${TURNSTILE_SECRET}');
      expect(exported.body.collections.site.forms.news.spam_protection.captcha_secret).toBe('${HCAPTCHA_SECRET}');

      const unresolved = await api().put('/config?dryRun=true').set(bearer(adminKey)).send(exported.body).expect(400);
      expect(unresolved.body.error.details.fields).toContainEqual({
        field: `domains.${domain}.forms.contact.spam_protection.captcha_secret`,
        message: expect.stringContaining('reference to the environment variable TURNSTILE_SECRET'),
      });
    });

    it('mailroom push fills the references from its environment: the same secrets change nothing', async () => {
      const { port } = t!.app.getHttpServer().address() as AddressInfo;
      cli = { MAILROOM_URL: `http://127.0.0.1:${port}`, MAILROOM_API_KEY: adminKey };
      expect((await mailroom(['export', '-o', file()], cli)).code).toBe(0);
      const text = await readFile(file(), 'utf8');
      expect(text).toContain('captcha_secret: ${TURNSTILE_SECRET}');
      expectNoSecretIn(text);

      const same = { ...cli, TURNSTILE_SECRET: S1, HCAPTCHA_SECRET: H1 };
      expect(await mailroom(['plan', file()], same)).toMatchObject({ code: 0, stdout: 'No changes: the account matches the file.\n' });
      const push = await mailroom(['push', file()], same);
      expect(push).toMatchObject({ code: 0, stderr: '' });
      expect(await postContact()).toMatchObject({ status: 200, secret: S1 });
    });

    it('without a variable it names it, exits 1 and applies nothing', async () => {
      const run = await mailroom(['push', file()], { ...cli, TURNSTILE_SECRET: S3 });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('not set: HCAPTCHA_SECRET (collections.site.forms.news.spam_protection.captcha_secret)');
      expect(await postContact()).toMatchObject({ status: 200, secret: S1 });
    });

    it('a new secret in the environment is planned as a change without either value, and pushed', async () => {
      const env = { ...cli, TURNSTILE_SECRET: S3, HCAPTCHA_SECRET: H1 };
      const plan = await mailroom(['plan', file()], env);
      expect(plan.code).toBe(2);
      expect(plan.stdout).toMatch(new RegExp(`^~ update\\s+domains\\.${domain.replace(/\./g, '\\.')}\\.forms\\.contact\\s+form$`, 'm'));
      expect(plan.stdout).toContain('"captcha_secret":"(secret)"} → {"challenge":"turnstile","captcha_secret":"(new secret)"}');
      expect(plan.stdout).toContain('Plan: 0 to create, 2 to update, 0 to delete.');
      expectNoSecretIn(plan.stdout);

      const push = await mailroom(['push', file(), '--json'], env);
      expect(push.code).toBe(0);
      expectNoSecretIn(push.stdout);
      expect(JSON.parse(push.stdout).summary).toEqual({ create: 0, update: 2, delete: 0 });
      await settle();
      expect(await postContact()).toMatchObject({ status: 200, secret: S3 });
      expectNoSecretIn((await db().query(`SELECT string_agg(settings::text, ' ') AS all FROM forms WHERE slug IS NOT NULL`))[0].all);
    });
  });

  describe('rotating ENCRYPTION_KEY', () => {
    const plainTextRows = async (): Promise<number> =>
      Number(
        (await db().query(`SELECT count(*) AS n FROM forms WHERE settings #>> '{spam_protection,captcha_secret}' NOT LIKE 'v1.%'`))[0].n,
      );

    it('reseal-secrets re-seals CAPTCHA secrets under the new key and seals the plain-text one', async () => {
      const sealed = Number(
        (await db().query(`SELECT count(*) AS n FROM forms WHERE settings #>> '{spam_protection,captcha_secret}' LIKE 'v1.%'`))[0].n,
      );
      expect(sealed).toBe(4); // the stand-alone form; contact, quote and news of the file
      expect(await plainTextRows()).toBe(1);
      const env = { DATABASE_URL: databaseUrl(databaseName), ENCRYPTION_KEY: keyB, ENCRYPTION_KEY_PREVIOUS: keyA };
      const first = await mailroom(['reseal-secrets'], env);
      expect(first).toMatchObject({ code: 0, stderr: '' });
      expect(first.stdout).toMatch(/^CAPTCHA secrets: +4 re-sealed, 0 already under ENCRYPTION_KEY, 1 in plain text sealed$/m);
      expect(await plainTextRows()).toBe(0);
      const second = await mailroom(['reseal-secrets'], env);
      expect(second.stdout).toMatch(/^CAPTCHA secrets: +0 re-sealed, 5 already under ENCRYPTION_KEY$/m);
    });

    it('under the new key alone, every form checks tokens with its secret; a plain-text row is sealed on start', async () => {
      await db().query(
        `UPDATE forms SET settings = jsonb_set(settings, '{spam_protection,captcha_secret}', to_jsonb($2::text)) WHERE id = $1`,
        [legacyId, LEGACY2],
      );
      await start({ ENCRYPTION_KEY: keyB });
      expect(await plainTextRows()).toBe(0);
      expectNoSecretIn((await db().query(`SELECT string_agg(settings::text, ' ') AS all FROM forms`))[0].all);

      expect(await postStandalone(formId)).toMatchObject({ status: 200, secret: S2 });
      expect(await postStandalone(legacyId)).toMatchObject({ status: 200, secret: LEGACY2 });
      expect(await post(`/${domain}/contact`, 'cf-turnstile-response', `https://${domain}`)).toMatchObject({ status: 200, secret: S3 });
      expect(await post(`/${domain}/quote`, 'cf-turnstile-response', `https://${domain}`)).toMatchObject({ status: 200, secret: S3 });
      expect(await post('/c/site/news', 'h-captcha-response', `https://${domain}`)).toMatchObject({ status: 200, secret: H1 });
    });
  });
});
