import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { deleteKeys } from '../support/global-teardown';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-env';

// An Idempotency-Key belongs to the API key that sent it and to the route (D-36): a key used by another key
// of the same account, by a browser holding the site's public token, or on another route is another record.
describe('Idempotency-Key scope', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  let backendKey: string;
  let reportingKey: string;
  let publicToken: string;
  const domain = 'idem.acme.test';
  const site = `https://www.${domain}`;
  const unique = () => randomBytes(5).toString('hex');
  const json = { Accept: 'application/json' };

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, FORMS_FROM: 'Acme Forms <forms@mailroom.test>' } });
    const account = await createAccount(t, 'Idempotent');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
    await t.http
      .put(`/domains/${domain}`)
      .set(bearer(adminKey))
      .send({ contactRecipients: ['contact@acme.example'], forms: { contact: { rateLimit: 1000 } } })
      .expect(200);
    backendKey = (await createKey(t, adminKey, { keyType: 'usage', name: 'backend' })).key;
    reportingKey = (await createKey(t, adminKey, { keyType: 'usage', name: 'reporting' })).key;
    publicToken = (await createKey(t, adminKey, { keyType: 'public', domainScope: domain })).key;
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const sendWith = (key: string, idempotencyKey: string, subject: string) =>
    t.http
      .post('/v1/send')
      .set(bearer(key))
      .set('Idempotency-Key', idempotencyKey)
      .send({ from: `hello@${domain}`, to: 'ada@example.org', subject, text: 'x' });

  async function createForm(): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(adminKey))
      .send({ name: 'Contact', to: 'owner@acme.example', rateLimit: 1000, allowedOrigins: [site] })
      .expect(201);
    return res.body.id;
  }

  it('gives two keys of one account using the same Idempotency-Key their own answers, and replays each its own', async () => {
    const idempotencyKey = `order-${unique()}`;
    const [backendSubject, reportingSubject] = [`backend ${unique()}`, `reporting ${unique()}`];
    const backend = await sendWith(backendKey, idempotencyKey, backendSubject).expect(200);
    const reporting = await sendWith(reportingKey, idempotencyKey, reportingSubject).expect(200);
    expect(reporting.headers['idempotent-replayed']).toBeUndefined();
    expect(reporting.body.messageId).not.toBe(backend.body.messageId);

    const backendAgain = await sendWith(backendKey, idempotencyKey, backendSubject).expect(200);
    expect(backendAgain.headers['idempotent-replayed']).toBe('true');
    expect(backendAgain.body).toEqual(backend.body);
    const reportingAgain = await sendWith(reportingKey, idempotencyKey, reportingSubject).expect(200);
    expect(reportingAgain.headers['idempotent-replayed']).toBe('true');
    expect(reportingAgain.body).toEqual(reporting.body);
    const conflict = await sendWith(reportingKey, idempotencyKey, `${reportingSubject} changed`).expect(409);
    expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');

    await sink.waitFor((m) => m.parsed?.subject === backendSubject);
    await sink.waitFor((m) => m.parsed?.subject === reportingSubject);
    expect(sink.messages.filter((m) => [backendSubject, reportingSubject].includes(m.parsed?.subject ?? ''))).toHaveLength(2);
  });

  it('does not let a form post with the public token take the Idempotency-Key of the backend’s POST /v1/send', async () => {
    const idempotencyKey = `order-${unique()}`;
    const visitor = await t.http
      .post(`/v1/${domain}/send`)
      .set({ ...json, 'X-Public-Token': publicToken, Origin: site, 'Idempotency-Key': idempotencyKey })
      .send({ email: 'visitor@example.org', message: unique() })
      .expect(200);
    expect(visitor.body.submissionId).toMatch(/^sub_/);

    const subject = `after the visitor ${unique()}`;
    const backend = await sendWith(backendKey, idempotencyKey, subject).expect(200);
    expect(backend.headers['idempotent-replayed']).toBeUndefined();
    expect(backend.body).toMatchObject({ messageId: expect.any(String), status: 'queued' });
    await sink.waitFor((m) => m.parsed?.subject === subject);
  });

  it('keeps the public token’s, another key’s and an anonymous post’s answers apart on the same form route', async () => {
    const idempotencyKey = `form-${unique()}`;
    const post = (headers: Record<string, string>, marker: string) =>
      t.http
        .post(`/v1/${domain}/send`)
        .set({ ...json, Origin: site, 'Idempotency-Key': idempotencyKey, ...headers })
        .send({ email: 'visitor@example.org', message: marker });
    const markers = [unique(), unique(), unique()];
    const visitor = await post({ 'X-Public-Token': publicToken }, markers[0]).expect(200);
    const server = await post(bearer(adminKey), markers[1]).expect(200);
    const anonymous = await post({}, markers[2]).expect(200);
    const ids = [visitor, server, anonymous].map((res) => res.body.submissionId);
    expect(new Set(ids).size).toBe(3);
    for (const res of [visitor, server, anonymous]) expect(res.headers['idempotent-replayed']).toBeUndefined();

    const anonymousAgain = await post({}, markers[2]).expect(200);
    expect(anonymousAgain.headers['idempotent-replayed']).toBe('true');
    expect(anonymousAgain.body.submissionId).toBe(anonymous.body.submissionId);
    for (const marker of markers) await sink.waitFor((m) => (m.parsed?.text ?? '').includes(marker));
  });

  it('makes the same key on another route, or on another form, another record', async () => {
    const idempotencyKey = `route-${unique()}`;
    const subject = `single ${unique()}`;
    const single = await sendWith(backendKey, idempotencyKey, subject).expect(200);
    const batch = await t.http
      .post('/email/batch')
      .set(bearer(backendKey))
      .set('Idempotency-Key', idempotencyKey)
      .send({ from: `hello@${domain}`, subject: `batch ${subject}`, text: 'x', recipients: [{ email: 'grace@example.org' }] })
      .expect(200);
    expect(batch.headers['idempotent-replayed']).toBeUndefined();
    expect(batch.body.data[0].messageId).not.toBe(single.body.messageId);
    await sink.waitFor((m) => m.parsed?.subject === `batch ${subject}`);

    const [first, second] = [await createForm(), await createForm()];
    const submit = (formId: string) =>
      t.http
        .post(`/f/${formId}`)
        .set({ ...json, Origin: site, 'Idempotency-Key': idempotencyKey })
        .send({ message: 'the same post' });
    const toFirst = await submit(first).expect(200);
    const toSecond = await submit(second).expect(200);
    expect(toSecond.headers['idempotent-replayed']).toBeUndefined();
    expect(toSecond.body.submissionId).not.toBe(toFirst.body.submissionId);
    const replay = await submit(first).expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.submissionId).toBe(toFirst.body.submissionId);
  });

  // Redis only caches an answer: the record PostgreSQL keeps with the effect is looked up before the route runs.
  it('replays a usage record that PostgreSQL keeps and Redis lost, without recording the usage again', async () => {
    const tenant = await createAccount(t, 'Reporting');
    const idempotencyKey = `usage-${unique()}`;
    const report = () =>
      t.http
        .post('/api/billing/usage')
        .set(bearer(tenant.adminKey))
        .set('Idempotency-Key', idempotencyKey)
        .send({ tenantId: tenant.accountId, emailCount: 7 });
    const first = await report().expect(200);

    const redis = new Redis(TEST_REDIS_URL);
    await deleteKeys(redis, `${t.env.REDIS_KEY_PREFIX}idempotency:*`).finally(() => redis.disconnect());
    const retry = await report().expect(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(first.body);
    const info = await t.http.get('/api/billing/info').set(bearer(tenant.adminKey)).query({ tenantId: tenant.accountId }).expect(200);
    expect(info.body.currentPeriod.emailsSent).toBe(7);
  });
});
