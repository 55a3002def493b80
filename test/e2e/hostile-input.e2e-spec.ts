import { Logger } from '@nestjs/common';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { bearer, createAccount } from '../support/factories';
import { PgProxy } from '../support/pg-proxy';
import { rawRequest, type RawRequest } from '../support/raw-request';
import { createTestApp, TestApp } from '../support/test-app';
import { cloneTemplateDatabase } from '../support/test-env';

const errorBody = (code: string) => ({
  error: expect.objectContaining({ code, message: expect.any(String) }),
  documentation: 'http://mailroom.test/docs#errors',
});
const TOO_DEEP = 'The request body nests objects or arrays more than 32 levels deep';
const NUL = 'must not contain NUL (U+0000)';
const SURROGATE = 'must not contain an unpaired UTF-16 surrogate';

/** `levels` objects deep, the top one included, built as text (JSON.stringify itself overflows at a few thousand). */
const nestedObject = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
const nestedArray = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

/**
 * Input a fuzz run over the OpenAPI operations answered with 500s (issue 9): NUL in path parameters, deep
 * bodies, a body that does not match its Content-Encoding, text PostgreSQL refuses; and PostgreSQL itself
 * unreachable. Every one must be a 4xx (or the 503) in the D-10 body. The app reaches PostgreSQL through a
 * proxy the outage tests can break.
 */
describe('Hostile input and PostgreSQL outages', () => {
  let t: TestApp;
  let proxy: PgProxy;
  let key: string;
  let otherKey: string;

  const send = (request: RawRequest) => rawRequest(t.app.getHttpServer(), { ...request, headers: { ...bearer(key), ...request.headers } });
  const postJson = (path: string, body: string | Buffer, headers: Record<string, string> = {}, method = 'POST') =>
    send({ method, path, body, headers: { 'Content-Type': 'application/json', ...headers } });
  const email = (fields: Record<string, unknown>) =>
    t.http
      .post('/email/send')
      .set(bearer(key))
      .send({ from: 'news@example.com', to: 'ada@example.org', subject: 'Hi', ...fields });

  beforeAll(async () => {
    proxy = await PgProxy.start();
    const database = await cloneTemplateDatabase();
    t = await createTestApp({
      env: { DATABASE_URL: proxy.url(database), DOMAIN_VERIFICATION: 'skip', APP_ROLE: 'api' },
    });
    ({ adminKey: key } = await createAccount(t, 'Hostile'));
    ({ adminKey: otherKey } = await createAccount(t, 'Neighbour'));
    await t.http.post('/domains').set(bearer(key)).send({ domain: 'example.com' }).expect(201);
    await t.http.post('/domains').set(bearer(otherKey)).send({ domain: 'example.net' }).expect(201);
    await t.http.post('/email/templates').set(bearer(key)).send({ name: 'welcome', subject: 'Hi', html: '<p>Hi</p>' }).expect(201);
  });
  afterAll(async () => {
    await t.close();
    await proxy.close();
  });

  describe('path parameters and query values are checked before any query', () => {
    it.each([
      ['DELETE', '/email/suppression/abc%00def', 'email'],
      ['GET', '/email/templates/wel%00come', 'name'],
      ['GET', '/email/status/msg_%00', 'messageId'],
      ['DELETE', '/email/scheduled/msg_%00', 'messageId'],
      ['DELETE', '/api-keys/key_%00', 'keyId'],
      ['GET', '/domains/exa%00mple.com', 'domain'],
      ['GET', '/email/suppression/check?email=ada%00@example.org', 'email'],
      ['GET', '/email/suppression?cursor=%00', 'cursor'],
    ])('%s %s → 400 naming %s', async (method, path, field) => {
      const res = await send({ method, path });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(errorBody('VALIDATION_FAILED'));
      expect(res.body.error.details.fields).toEqual([{ field, message: NUL }]);
    });

    it('a path parameter that is not UTF-8 is a 400 as well', async () => {
      for (const path of ['/email/templates/%ff', '/email/templates/%ED%A0%80']) {
        const res = await send({ method: 'GET', path });
        expect(res.status).toBe(400);
        expect(res.body).toEqual(errorBody('VALIDATION_FAILED'));
      }
    });
  });

  describe('text PostgreSQL refuses, anywhere in a body', () => {
    it('NUL in an email body → 400 naming text', async () => {
      const res = await email({ text: 'a\u0000b' }).expect(400);
      expect(res.body.error.details.fields).toEqual([{ field: 'text', message: NUL }]);
    });

    it('a lone surrogate in an attachment name → 400 naming attachments[0].filename', async () => {
      const body =
        '{"from":"news@example.com","to":"ada@example.org","subject":"Hi","text":"x",' +
        '"attachments":[{"filename":"r\\ud800.pdf","content":"aGk="}]}';
      const res = await postJson('/email/send', body);
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields).toEqual([{ field: 'attachments[0].filename', message: SURROGATE }]);
    });

    it('in a key restriction, a template, a suppression entry, a variable name', async () => {
      const restricted = await postJson(
        '/api-keys',
        '{"name":"k","keyType":"usage","restrictions":{"domain_restrictions":["example.com","exa\\udc00mple.com"]}}',
      );
      expect(restricted.status).toBe(400);
      expect(restricted.body.error.details.fields).toEqual([{ field: 'restrictions.domain_restrictions[1]', message: SURROGATE }]);

      const template = await t.http.post('/email/templates').set(bearer(key)).send({ name: 'x', subject: 'Hi\u0000', html: 'h' });
      expect(template.status).toBe(400);
      expect(template.body.error.details.fields).toEqual([{ field: 'subject', message: NUL }]);

      const suppression = await t.http.post('/email/suppression').set(bearer(key)).send({ email: 'ada\u0000@example.org' });
      expect(suppression.body.error.details.fields).toEqual([{ field: 'email', message: NUL }]);

      const variable = await email({ text: 'x', variables: { 'na\u0000me': 'Ada' } }).expect(400);
      expect(variable.body.error.details.fields).toEqual([{ field: 'variables.na\\u0000me', message: `name ${NUL}` }]);
    });

    it('one bad send among concurrent sends of two accounts fails alone', async () => {
      const sends = [
        email({ text: 'one' }),
        t.http.post('/email/send').set(bearer(otherKey)).send({ from: 'a@example.net', to: 'b@example.org', subject: 'Hi', text: 'two' }),
        email({ text: 'bad\u0000' }),
        email({ html: '<p>four</p>' }),
      ];
      const statuses = (await Promise.all(sends)).map((res) => res.status);
      expect(statuses).toEqual([200, 200, 400, 200]);
    });
  });

  describe('an array where an object is expected', () => {
    const NOT_AN_ARRAY = 'must be an object, not an array';
    const sendBody = { from: 'news@example.com', to: 'ada@example.org', subject: 'Hi', text: 'x' };

    it.each([
      ['POST', '/instant/forms/batch', { forms: [[]] }, 'forms[0]'],
      [
        'POST',
        '/instant/forms/batch',
        { forms: [{ name: 'a', email: 'a@example.org' }, [{ name: 'b', email: 'b@example.org' }]] },
        'forms[1]',
      ],
      ['POST', '/email/send', { ...sendBody, tracking: [] }, 'tracking'],
      ['POST', '/email/send', { ...sendBody, attachments: [[{ filename: 'a.txt', content: 'aGk=' }]] }, 'attachments[0]'],
      ['POST', '/email/batch', { from: 'news@example.com', subject: 'Hi', text: 'x', recipients: [[]] }, 'recipients[0]'],
      ['POST', '/api-keys', { name: 'k', keyType: 'usage', restrictions: [{ rate_limit: 10 }] }, 'restrictions'],
      ['POST', '/api-keys', { name: 'k', keyType: 'usage', restrictions: [] }, 'restrictions'],
      ['PATCH', '/settings', { global_limits: [] }, 'global_limits'],
      ['POST', '/email/send', [sendBody], 'body'],
      ['POST', '/instant/forms/batch', [{ forms: [] }], 'body'],
    ])('%s %s %j → 400 naming %s', async (method, path, body, field) => {
      const res = await postJson(path, JSON.stringify(body), {}, method);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(errorBody('VALIDATION_FAILED'));
      expect(res.body.error.details.fields).toContainEqual({ field, message: NOT_AN_ARRAY });
    });

    it('a key is not made with restrictions given as a list', async () => {
      await postJson('/api-keys', JSON.stringify({ name: 'listed', keyType: 'usage', restrictions: [{ rate_limit: 10 }] }));
      const keys = await t.http.get('/api-keys').set(bearer(key)).expect(200);
      expect(JSON.stringify(keys.body)).not.toContain('listed');
    });
  });

  describe('nesting is limited at the body parser', () => {
    it.each([
      ['POST', '/email/templates', (deep: string) => `{"name":"n","subject":"s","html":"h","description":${deep}}`],
      ['POST', '/api-keys', (deep: string) => `{"name":"k","keyType":"usage","restrictions":{"domain_restrictions":${deep}}}`],
      ['POST', '/email/suppression', (deep: string) => `{"email":${deep}}`],
      ['POST', '/email/templates/welcome/render', (deep: string) => `{"variables":${deep}}`],
      ['PUT', '/domains/example.com', (deep: string) => `{"forwarding":${deep}}`],
      ['POST', '/email/send', (deep: string) => `{"from":"news@example.com","to":"ada@example.org","text":"x","variables":${deep}}`],
    ])('%s %s: 5,000 levels → 400', async (method, path, bodyWith) => {
      for (const deep of [nestedArray(5000), nestedObject(5000)]) {
        const res = await postJson(path, bodyWith(deep), {}, method);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ ...errorBody('VALIDATION_FAILED'), error: { code: 'VALIDATION_FAILED', message: TOO_DEEP } });
      }
    });

    it('32 levels pass, 33 do not; JSON and url-encoded alike', async () => {
      const render = (body: string) => postJson('/email/templates/welcome/render', body);
      // The render body nests `variables` one level under the top: n levels of variables = n + 1 in all.
      expect((await render(`{"variables":${nestedObject(31)}}`)).status).toBe(200);
      expect((await render(`{"variables":${nestedObject(32)}}`)).body.error.message).toBe(TOO_DEEP);

      const form = (levels: number) =>
        send({
          method: 'POST',
          path: '/email/templates/welcome/render',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: `variables${'[a]'.repeat(levels - 1)}=1`, // `variables[a]=1` is {variables: {a: 1}}: two levels
        });
      expect((await form(32)).status).toBe(200);
      const deep = await form(33);
      expect(deep.status).toBe(400);
      expect(deep.body.error.message).toBe(TOO_DEEP);
    });
  });

  describe('content encodings', () => {
    const createKey = (body: string | Buffer, encoding: string) => postJson('/api-keys', body, { 'Content-Encoding': encoding });
    const json = '{"name":"compressed","keyType":"usage"}';

    it('gzip, deflate and br bodies are read', async () => {
      for (const [encoding, body] of [
        ['gzip', gzipSync(json)],
        ['deflate', deflateSync(json)],
        ['br', brotliCompressSync(json)],
      ] as const) {
        const res = await createKey(body, encoding);
        expect([encoding, res.status]).toEqual([encoding, 201]);
      }
    });

    it('a body that does not match its Content-Encoding → 400', async () => {
      for (const [encoding, body] of [
        ['br', Buffer.from(json)],
        ['gzip', Buffer.from(json)],
        ['gzip', gzipSync(json).subarray(0, 20)],
        ['deflate', Buffer.from('not deflate')],
      ] as const) {
        const res = await createKey(body, encoding);
        expect([encoding, res.status]).toEqual([encoding, 400]);
        expect(res.body).toEqual(errorBody('VALIDATION_FAILED'));
        expect(res.body.error.message).toBe('The request body is not valid for its Content-Encoding');
      }
    });

    it('an encoding body-parser does not know, or JSON that is not UTF-8 → 415', async () => {
      for (const encoding of ['compress', 'x-snappy', 'gzip, br']) {
        const res = await createKey(json, encoding);
        expect([encoding, res.status]).toEqual([encoding, 415]);
        expect(res.body).toEqual(errorBody('UNSUPPORTED_MEDIA_TYPE'));
      }
      const utf16 = await postJson('/api-keys', Buffer.from(json, 'utf16le'), { 'Content-Type': 'application/json; charset=utf-16le' });
      expect(utf16.status).toBe(415);
      expect(utf16.body).toEqual(errorBody('UNSUPPORTED_MEDIA_TYPE'));
    });
  });

  describe('PostgreSQL unreachable', () => {
    afterEach(() => proxy.forward());

    const expectUnavailable = (res: { status: number; headers: Record<string, unknown>; body: unknown }) => {
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toEqual(errorBody('SERVICE_UNAVAILABLE'));
    };

    it('refused connections → 503 with Retry-After on sends, reads and key lookups; then back to normal', async () => {
      const { adminKey: uncachedKey } = await createAccount(t, 'Uncached');
      const errors = jest.spyOn(Logger.prototype, 'error');
      const logs = jest.spyOn(Logger.prototype, 'log');
      const outageLines = (spy: jest.SpyInstance, text: string) =>
        spy.mock.calls.filter(([message]) => String(message).includes(text)).length;
      try {
        await proxy.refuse();
        const started = Date.now();
        expectUnavailable(await email({ text: 'during the outage' }));
        expectUnavailable(await t.http.get('/email/templates').set(bearer(key)));
        expectUnavailable(await t.http.get('/domains').set(bearer(uncachedKey)));
        expect(Date.now() - started).toBeLessThan(3000);
        expect(outageLines(errors, 'PostgreSQL cannot be reached')).toBe(1); // once per outage, not per request

        await proxy.forward();
        await email({ text: 'after the outage' }).expect(200);
        await t.http.get('/domains').set(bearer(uncachedKey)).expect(200);
        expect(outageLines(logs, 'PostgreSQL answers again (3 requests were answered 503)')).toBe(1);
      } finally {
        errors.mockRestore();
        logs.mockRestore();
      }
    });

    it('a server that is starting up → 503', async () => {
      await proxy.refuse(); // empties the pool: every request needs a new connection
      await proxy.forward();
      proxy.startingUp();
      expectUnavailable(await email({ text: 'while it starts' }));
      expectUnavailable(await t.http.get('/email/templates/welcome').set(bearer(key)));
    });
  });
});
