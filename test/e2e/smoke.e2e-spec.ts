import { createTestApp, TestApp } from '../support/test-app';
import { bearer, createAccount } from '../support/factories';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('boots', async () => {
    await t.http.get('/health').expect(200, { status: 'ok' });
    const ready = await t.http.get('/health/ready');
    expect(ready.body).toEqual({ status: 'ok', checks: { postgres: 'up', redis: 'up' } });
    const { adminKey } = await createAccount(t);
    const res = await t.http.post('/api-keys').set(bearer(adminKey)).send({ name: 'u', keyType: 'usage' });
    expect(res.status).toBe(201);
  });
});
