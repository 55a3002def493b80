import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { bearer, createAccount } from '../support/factories';
import { rawRequest } from '../support/raw-request';
import { createTestApp, TestApp } from '../support/test-app';

const errorBody = (code: string) => ({
  error: expect.objectContaining({ code, message: expect.any(String) }),
  documentation: 'http://mailroom.test/docs#errors',
});

describe('HTTP surface: error bodies, request ids, docs, health', () => {
  let t: TestApp;
  let adminKey: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ adminKey } = await createAccount(t));
  });
  afterAll(() => t.close());

  it('400: validation errors list each field', async () => {
    const res = await t.http.post('/api-keys').set(bearer(adminKey)).send({ keyType: 'nope' }).expect(400);
    expect(res.body).toEqual(errorBody('VALIDATION_FAILED'));
    expect(res.body.error.details.fields).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'name' }), expect.objectContaining({ field: 'keyType' })]),
    );
  });

  it('400: malformed JSON', async () => {
    const res = await t.http
      .post('/api-keys')
      .set(bearer(adminKey))
      .set('Content-Type', 'application/json')
      .send('{"name": "k", keyType: }')
      .expect(400);
    expect(res.body).toEqual(errorBody('MALFORMED_JSON'));
  });

  it('401 and 403 carry the same body shape', async () => {
    expect((await t.http.get('/api-keys').expect(401)).body).toEqual(errorBody('AUTH_MISSING'));
    expect((await t.http.get('/admin/accounts').set(bearer(adminKey)).expect(403)).body).toEqual(errorBody('FORBIDDEN'));
  });

  it('404: unknown routes and unknown resources', async () => {
    const route = await t.http.get('/no/such/route').set(bearer(adminKey)).expect(404);
    expect(route.body).toEqual(errorBody('NOT_FOUND'));
    expect(route.body.error.message).toBe('No route GET /no/such/route');
    const resource = await t.http.delete('/api-keys/key_unknown').set(bearer(adminKey)).expect(404);
    expect(resource.body).toEqual(errorBody('NOT_FOUND'));
  });

  it('413: a body over 40 MB', async () => {
    const huge = JSON.stringify({ name: 'x'.repeat(41 * 1024 * 1024) });
    const res = await t.http.post('/api-keys').set(bearer(adminKey)).set('Content-Type', 'application/json').send(huge);
    expect(res.status).toBe(413);
    expect(res.body).toEqual(errorBody('PAYLOAD_TOO_LARGE'));
  });

  it('431 and 400 from Node’s HTTP parser carry the body too', async () => {
    const long = await rawRequest(t.app.getHttpServer(), {
      method: 'GET',
      path: `/api-keys?q=${'a'.repeat(20_000)}`,
      headers: bearer(adminKey),
    });
    expect(long.status).toBe(431);
    expect(long.body).toEqual(errorBody('REQUEST_HEADERS_TOO_LARGE'));

    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toMatch(/Content-Type: application\/json/);
    expect(JSON.parse(body)).toEqual(errorBody('VALIDATION_FAILED'));
  });

  it('echoes X-Request-Id, or makes one', async () => {
    const given = await t.http.get('/health').set('X-Request-Id', 'req-123').expect(200);
    expect(given.headers['x-request-id']).toBe('req-123');
    const made = await t.http.get('/health').expect(200);
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const refused = await t.http.get('/health').set('X-Request-Id', 'bad id\twith spaces').expect(200);
    expect(refused.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reports liveness and readiness', async () => {
    await t.http.get('/health').expect(200, { status: 'ok' });
    const ready = await t.http.get('/health/ready').expect(200);
    expect(ready.body).toMatchObject({ status: 'ok', checks: { postgres: 'up', redis: 'up', provider: 'up', workers: 'up' } });
  });

  it('serves Swagger UI and an OpenAPI document with the three credential schemes', async () => {
    const ui = await t.http.get('/docs/').expect(200);
    expect(ui.text).toMatch(/swagger-ui/i);
    const doc = (await t.http.get('/docs-json').expect(200)).body;
    // The three credential schemes of the API, and the operator's for /metrics.
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([
      'ApiKeyHeader',
      'BearerKey',
      'MetricsToken',
      'OperatorBasic',
      'PublicToken',
    ]);
    expect(doc.paths['/api-keys'].post.security).toEqual(expect.arrayContaining([{ BearerKey: [] }, { ApiKeyHeader: [] }]));
    expect(doc.paths['/api-keys'].post.requestBody).toBeDefined();
    expect(doc.paths['/admin/accounts'].get.responses['200']).toBeDefined();
    expect(doc.components.schemas.CreateApiKeyDto.properties.restrictions).toBeDefined();
  });
});
