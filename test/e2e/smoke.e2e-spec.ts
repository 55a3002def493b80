import { Client } from 'pg';
import { bearer } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { databaseUrl, shortRandom, testRunId } from '../support/test-env';

describe('start-up on a machine without the database', () => {
  let t: TestApp;
  const name = `mailroom_test_${testRunId()}_startup_${shortRandom()}`;

  beforeAll(async () => {
    t = await createTestApp({ env: { DATABASE_URL: databaseUrl(name) } });
  });
  afterAll(() => t.close());

  it('creates the database, runs every migration and answers', async () => {
    const client = new Client({ connectionString: databaseUrl(name) });
    await client.connect();
    try {
      const { rows } = await client.query<{ count: string }>('SELECT count(*) FROM migrations');
      expect(Number(rows[0].count)).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
    const ready = await t.http.get('/health/ready').expect(200);
    expect(ready.body).toMatchObject({ status: 'ok', checks: { postgres: 'up', redis: 'up', provider: 'up', workers: 'up' } });
    const res = await t.http.post('/api-keys').set(bearer(t.operatorKey)).send({ name: 'u', keyType: 'usage' });
    expect(res.status).toBe(201);
  });
});
